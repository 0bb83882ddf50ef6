"""Aider (`aider-chat`, PyPI)."""
from __future__ import annotations

import re
from pathlib import Path

from build_loop.clis.base import Cli


class Aider(Cli):
    # One message from a file, no prompts. --no-git: the governor owns git (aider would otherwise `git init` a work
    # tree whose git directory lives elsewhere, commit, and edit .gitignore), and with no repository aider keeps no
    # repo-map cache (.aider.tags.cache.v*) in the work tree. No update check, release notes, model warnings or
    # analytics prompt, which would wait on a person or reach the network; no shell commands, since the governor runs
    # the checks. Edits in aider's text format: "whole" for a model aider does not know, its own choice for one it does.
    name, executable = "aider", "aider"
    flags = ("--yes-always", "--no-git", "--no-stream", "--no-pretty", "--no-fancy-input", "--no-check-update",
             "--no-show-release-notes", "--no-show-model-warnings", "--no-analytics", "--no-suggest-shell-commands",
             "--no-detect-urls")
    prompt = "file-flag:--message-file"
    state = ("~/.aider",)
    limit = re.compile(r"RateLimitError|rate limit|quota", re.IGNORECASE)
    wires = ("openai", "anthropic")
    needs_model = True

    def model_name(self, model: str, wire: str | None) -> str:
        """litellm's prefix for the wire: openai/<model>, anthropic/<model>."""
        return f"{wire}/{model}" if wire and model and not model.startswith(f"{wire}/") else model

    def turn_env(self, scratch: Path, *, direct_endpoint: bool) -> dict[str, str]:
        # its chat and input histories would land in the work tree, where the fence counts them as edits
        return {"AIDER_CHAT_HISTORY_FILE": str(scratch / ".aider.chat.history.md"),
                "AIDER_INPUT_HISTORY_FILE": str(scratch / ".aider.input.history")}

    def route_env(self, url: str, token: str, wire: str, model: str, scratch: Path) -> dict[str, str]:
        if wire == "anthropic":
            return {"ANTHROPIC_API_BASE": url, "ANTHROPIC_API_KEY": token}
        return {"OPENAI_API_BASE": url, "OPENAI_API_KEY": token}
