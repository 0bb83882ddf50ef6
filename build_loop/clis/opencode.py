"""opencode (`opencode-ai`)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from build_loop.clis.base import TOKEN_ENV, ConfiguredProvider


class Opencode(ConfiguredProvider):
    # `opencode run` reads a piped stdin as the message (an argument too would send it twice). --title: without one,
    # opencode sends the prompt in a second request to name the session. opencode retries a 429 without end and says
    # nothing; --print-logs at ERROR puts each "Rate limit exceeded" on stderr, so a turn that ends on the budget with
    # those lines reads as rate limited (through the gateway, the gateway ends the turn at the first 429).
    name, executable = "opencode", "opencode"
    flags = ("run", "--title", "banach", "--print-logs", "--log-level", "ERROR")
    state = ("~/.local/share/opencode", "~/.local/state/opencode", "~/.config/opencode", "~/.cache/opencode")
    # no models.dev catalogue fetched at start (the network may be gateway-only), no self-update mid-turn
    env = {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"}
    limit = re.compile(r"rate limit|usage limit|too many requests|\b429\b", re.IGNORECASE)

    def route_env(self, url: str, token: str, wire: str, model: str, scratch: Path) -> dict[str, str]:
        xdg = {f"XDG_{name}_HOME": str(scratch / "opencode" / name.lower()) for name in ("DATA", "CONFIG", "STATE", "CACHE")}
        for folder in xdg.values():
            Path(folder).mkdir(parents=True, exist_ok=True)
        sdk, base = ("@ai-sdk/anthropic", url + "/v1") if wire == "anthropic" else ("@ai-sdk/openai-compatible", url)
        provider = {"npm": sdk, "name": "banach gateway", "options": {"baseURL": base, "apiKey": "{env:" + TOKEN_ENV + "}"},
                    "models": {model: {"name": model}}}
        config = scratch / "opencode.json"
        config.write_text(json.dumps({"provider": {"banach": provider}, "autoupdate": False, "share": "disabled"}))
        return {**xdg, "OPENCODE_CONFIG": str(config), TOKEN_ENV: token}
