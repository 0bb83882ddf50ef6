"""pi (`@mariozechner/pi-coding-agent`)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from build_loop.clis.base import TOKEN_ENV, ConfiguredProvider


class Pi(ConfiguredProvider):
    # Print mode reads the prompt from stdin; --no-session keeps no session file; --offline: no update or package
    # checks at startup. The model is "provider/id", the provider from ~/.pi/agent/models.json or built in.
    name, executable = "pi", "pi"
    flags = ("-p", "--no-session", "--offline")
    state = ("~/.pi",)
    limit = re.compile(r"rate limit|usage limit|too many requests|\b429\b", re.IGNORECASE)

    def route_env(self, url: str, token: str, wire: str, model: str, scratch: Path) -> dict[str, str]:
        agent_dir = scratch / "pi-agent"
        agent_dir.mkdir(parents=True, exist_ok=True)
        api = "anthropic-messages" if wire == "anthropic" else "openai-completions"
        provider = {"baseUrl": url, "api": api, "apiKey": TOKEN_ENV, "models": [{"id": model}],
                    # what a generic OpenAI-compatible server (vLLM, llama.cpp, Ollama) lacks; harmless elsewhere
                    "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False}}
        (agent_dir / "models.json").write_text(json.dumps({"providers": {"banach": provider}}))
        # no retries of its own: the gateway ends the turn on a limit
        (agent_dir / "settings.json").write_text(json.dumps({"retry": {"enabled": False}}))
        return {"PI_CODING_AGENT_DIR": str(agent_dir), TOKEN_ENV: token}
