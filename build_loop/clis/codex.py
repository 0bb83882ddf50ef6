"""Codex CLI (`@openai/codex`)."""
from __future__ import annotations

import re
from pathlib import Path

from build_loop.clis.base import TOKEN_ENV, Cli


class Codex(Cli):
    # `codex exec` runs non-interactively ('-' reads the prompt from stdin); --ephemeral keeps no session files. Its own
    # sandbox (bubblewrap) cannot start inside Landlock and every tool call would fail while codex exits 0:
    # --dangerously-bypass-approvals-and-sandbox is its documented switch for "externally sandboxed".
    name, executable = "codex", "codex"
    flags = ("exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", "--ephemeral")
    prompt = "stdin-dash"
    state = ("$CODEX_HOME", "~/.codex")
    limit = re.compile(r"usage limit|usage_limit_reached|rate limit|too many requests|\b429\b", re.IGNORECASE)
    wires = ("openai",)
    scratch_home = "CODEX_HOME"

    def takes_base_url(self) -> bool:
        return True

    def endpoint_argv(self, base_url: str, key_env: str) -> list[str]:
        # a model provider of its own, given on the command line: no config.toml to write. Codex appends /responses.
        provider = (f'{{name="banach", base_url="{base_url}", env_key="{key_env or "OPENAI_API_KEY"}", '
                    'wire_api="responses", request_max_retries=1, stream_max_retries=1}')
        return ["-c", "model_provider=banach", "-c", f"model_providers.banach={provider}"]

    def route_env(self, url: str, token: str, wire: str, model: str, scratch: Path) -> dict[str, str]:
        return {TOKEN_ENV: token}  # the endpoint is on the command line, naming this variable
