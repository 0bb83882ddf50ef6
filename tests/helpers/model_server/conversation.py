"""The neutral shape every wire format is read into, and the reply the script gives back in any format."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

LABEL = "SCRIPTED MODEL SERVER: a stand-in for an LLM, no model is called."


@dataclass(frozen=True)
class ToolSpec:
    """A tool the client offers: `kind` is "function" (JSON arguments) or "custom" (codex's free-text apply_patch)."""

    name: str
    kind: str
    parameters: Mapping[str, Any]  # the JSON schema's "properties"


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    custom_input: str | None = None  # set for a "custom" tool, whose call carries raw text instead of JSON

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    name: str
    text: str
    is_error: bool = False


@dataclass(frozen=True)
class Message:
    role: str  # "user" or "assistant"
    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    results: tuple[ToolResult, ...] = ()


@dataclass(frozen=True)
class Conversation:
    """What a request asks, whatever its wire format."""

    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    json_schema: Mapping[str, Any] | None  # set when the client asks for structured output
    strings: tuple[str, ...]  # every string in the body, for finding the CLI's working directory

    @property
    def turn_start(self) -> int:
        """Index of the user message that began the current turn (the last one that is not a tool result)."""
        for index in range(len(self.messages) - 1, -1, -1):
            message = self.messages[index]
            if message.role == "user" and not message.results:
                return index
        return 0

    @property
    def is_continuation(self) -> bool:
        """True when the request carries the results of tool calls: the model is mid-turn."""
        return bool(self.messages) and bool(self.messages[-1].results)

    @property
    def prompt(self) -> str:
        return self.messages[self.turn_start].text if self.messages else ""

    @property
    def user_text(self) -> str:
        return "\n".join(m.text for m in self.messages if m.role == "user")


@dataclass(frozen=True)
class Reply:
    text: str
    calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int


def count_tokens(text: str) -> int:
    """About four characters a token, as the providers' own rule of thumb says."""
    return max(1, (len(text) + 3) // 4)


def usage_for(body_text: str, reply: Reply) -> Usage:
    out = reply.text + "".join(c.custom_input or c.arguments_json for c in reply.calls)
    return Usage(count_tokens(body_text), count_tokens(out))


def all_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from all_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from all_strings(item)


def text_of(content: Any) -> str:
    """The text of a content value that may be a string, a list of parts, or a part."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (text_of(part) for part in content) if t)
    if isinstance(content, Mapping):
        for key in ("text", "content", "output", "input_text"):
            if key in content:
                return text_of(content[key])
        return ""
    return str(content)


_CWD_PATTERNS = (
    re.compile(r"<cwd>([^<\n]+)</cwd>"),  # codex's environment_context
    re.compile(r"Working directory: *([^\n]+)"),  # claude code, opencode
    re.compile(r"[Cc]urrent working directory: *([^\n]+)"),  # pi
    re.compile(r"working in the directory:? *([^\n]+)"),  # gemini-cli, qwen-code
)


def find_cwd(strings: tuple[str, ...]) -> str | None:
    """The CLI's working directory, as its system prompt or environment context states it."""
    for pattern in _CWD_PATTERNS:
        for text in strings:
            match = pattern.search(text)
            if match and match.group(1).strip().startswith("/"):
                return match.group(1).strip().rstrip(".`'\"")
    return None


def new_id(prefix: str, counter: int) -> str:
    return f"{prefix}{counter:06d}scripted"
