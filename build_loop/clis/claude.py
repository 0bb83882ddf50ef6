"""Claude Code (`@anthropic-ai/claude-code`)."""
from __future__ import annotations

import os
import re
from pathlib import Path

from build_loop.clis.base import Cli


class Claude(Cli):
    # Print mode: `claude -p` reads the prompt from stdin; JSON output carries total_cost_usd.
    # --dangerously-skip-permissions: no approval prompts, Banach is the sandbox.
    name, executable = "claude", "claude"
    flags = ("-p", "--output-format", "json", "--dangerously-skip-permissions")
    state = ("$CLAUDE_CONFIG_DIR", "~/.claude")  # with CLAUDE_CONFIG_DIR set (see turn_env) .claude.json is in it
    # As root, claude refuses --dangerously-skip-permissions unless IS_SANDBOX=1 (or CLAUDE_CODE_BUBBLEWRAP) says it
    # runs in a sandbox, which under Banach it does. No auto-update, telemetry or other traffic besides the model.
    # Two retries, not ten: a 429 is Banach's to wait out (with ten, claude spends minutes before it exits 1).
    env = {"IS_SANDBOX": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
           "CLAUDE_CODE_MAX_RETRIES": "2"}
    limit = re.compile(r"usage limit reached|hit your limit|rate[_ ]limit|overloaded_error|\b429\b", re.IGNORECASE)
    wires = ("anthropic",)
    base_url_env, key_env, scratch_home = "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR"

    def turn_env(self, scratch: Path, *, direct_endpoint: bool) -> dict[str, str]:
        if direct_endpoint:
            return super().turn_env(scratch, direct_endpoint=True)
        # claude writes ~/.claude.json by renaming a temporary file in HOME, which only a writable HOME allows; with
        # CLAUDE_CONFIG_DIR set it keeps that file in the (granted) config folder instead.
        return {"CLAUDE_CONFIG_DIR": os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~/.claude")}

    def route_env(self, url: str, token: str, wire: str, model: str, scratch: Path) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": token}
