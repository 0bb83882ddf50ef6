"""Gemini CLI (`@google/gemini-cli`)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from build_loop.clis.base import Cli


class Gemini(Cli):
    # A piped stdin is a headless run with that prompt (-p as well would send it twice); --yolo approves tool calls,
    # which gemini honours only in a trusted folder.
    name, executable = "gemini", "gemini"
    flags = ("--yolo", "--output-format", "json")
    state = ("~/.gemini",)
    # Headless gemini turns --yolo off and exits 55 in a folder it does not trust. The work tree is the agent's to
    # write anyway, and what runs in it runs inside Banach's sandbox.
    env = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
    limit = re.compile(r"quota exceeded|RESOURCE_EXHAUSTED|rate limit|\b429\b", re.IGNORECASE)
    wires = ("gemini",)
    base_url_env, key_env, scratch_home = "GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY", "GEMINI_CLI_HOME"

    def turn_env(self, scratch: Path, *, direct_endpoint: bool) -> dict[str, str]:
        env = super().turn_env(scratch, direct_endpoint=direct_endpoint)
        if env:
            # With GOOGLE_GEMINI_BASE_URL gemini picks its "gateway" auth, which its headless check rejects ("Invalid
            # auth method selected.", exit 41); named in its user settings, the key auth uses the base URL too. Two
            # attempts, not ten: a limit is Banach's to wait out. No usage statistics: they would go to Google.
            settings = Path(env[self.scratch_home]) / ".gemini"
            settings.mkdir(exist_ok=True)
            (settings / "settings.json").write_text(json.dumps({
                "security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"maxAttempts": 2},
                "privacy": {"usageStatisticsEnabled": False}}), encoding="utf-8")
        return env

    def route_env(self, url: str, token: str, wire: str, model: str, scratch: Path) -> dict[str, str]:
        return {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": token}
