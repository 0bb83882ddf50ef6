"""The agent CLIs Banach drives, one class each (base.py says what a class knows), found by preset name."""
from __future__ import annotations

from build_loop.clis.aider import Aider
from build_loop.clis.base import TOKEN_ENV, Cli
from build_loop.clis.claude import Claude
from build_loop.clis.codex import Codex
from build_loop.clis.gemini import Gemini
from build_loop.clis.opencode import Opencode
from build_loop.clis.pi import Pi
from build_loop.clis.qwen import Qwen

CLIS: dict[str, Cli] = {cli.name: cli for cli in (Claude(), Codex(), Gemini(), Qwen(), Opencode(), Pi(), Aider())}

__all__ = ["CLIS", "TOKEN_ENV", "Cli"]
