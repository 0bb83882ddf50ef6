"""Qwen Code (`@qwen-code/qwen-code`)."""
from __future__ import annotations

from pathlib import Path

from build_loop.clis.base import Cli


class Qwen(Cli):
    # A piped stdin is the prompt (a positional prompt as well would be appended: twice); --yolo approves tool calls;
    # the OpenAI-compatible auth takes its endpoint from --openai-base-url and its key from OPENAI_API_KEY.
    name, executable = "qwen", "qwen"
    flags = ("--yolo", "--auth-type", "openai", "--output-format", "json")
    state = ("~/.qwen",)
    env = {"QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"}
    wires = ("openai",)
    base_url_flag, key_env = "--openai-base-url", "OPENAI_API_KEY"

    def route_env(self, url: str, token: str, wire: str, model: str, scratch: Path) -> dict[str, str]:
        return {"OPENAI_API_KEY": token}  # the endpoint is on the command line
