"""The script: what the stand-in model does on each turn, and the step-by-step answers that carry it out."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.helpers.model_server.conversation import LABEL, Conversation, Reply, ToolCall, ToolResult, find_cwd
from tests.helpers.model_server.tools import (
    Target,
    aider_edit_text,
    pick_read_tool,
    pick_write_tool,
    read_call,
    target,
    wants_edit_blocks,
    write_call,
)


@dataclass(frozen=True)
class Write:
    """Write these files (path relative to the CLI's cwd, or absolute -> content), then answer `reply`.

    `tool` forces one offered tool by name (e.g. "shell" for codex) instead of the best write-capable one.
    """

    files: Mapping[str, str] | tuple[tuple[str, str], ...]
    reply: str = "Done."
    tool: str | None = None

    def __post_init__(self) -> None:
        pairs = tuple(self.files.items()) if isinstance(self.files, Mapping) else tuple(self.files)
        object.__setattr__(self, "files", pairs)

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        assert isinstance(self.files, tuple)
        return self.files


@dataclass(frozen=True)
class Nothing:
    """Answer with text only; no file changes."""

    text: str = "I have nothing to change."


@dataclass(frozen=True)
class RateLimit:
    """HTTP 429 with the provider's own headers and error body; `should_retry` sets x-should-retry (SDKs obey it)."""

    retry_after: int = 20
    should_retry: bool | None = None


@dataclass(frozen=True)
class Error:
    """HTTP 500 (status) or, with `overloaded`, Anthropic's 529 overloaded_error / OpenAI's and Gemini's 503."""

    status: int = 500
    overloaded: bool = False


Action = Write | Nothing | RateLimit | Error


@dataclass(frozen=True)
class Script:
    """One action per turn (a turn begins with a request whose last message is the user's prompt, not a tool result).

    When the turns run out, the last one repeats. `root` is the CLI's cwd for tools that want absolute paths (found
    in the request's system prompt when not given). `api_key`, when set, is required: other keys get a 401.
    """

    turns: tuple[Action, ...] = (Nothing(),)
    root: str | None = None
    models: tuple[str, ...] = ("scripted-model",)
    api_key: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "turns", tuple(self.turns) or (Nothing(),))
        object.__setattr__(self, "models", tuple(self.models))
        if self.root is not None:
            object.__setattr__(self, "root", str(self.root))

    @classmethod
    def of(cls, *turns: Action, **options: Any) -> Script:
        return cls(turns=turns, **options)


_READ_FIRST = re.compile(r"has not been read|read it first|must read|before (overwriting|writing)", re.IGNORECASE)
_FAILED = re.compile(
    r"^\s*(error|failed)\b|verification failed|exit code: *[1-9]|\"exit_code\": *[1-9]|permission denied", re.IGNORECASE
)


def failed(result: ToolResult) -> bool:
    return result.is_error or bool(_READ_FIRST.search(result.text)) or bool(_FAILED.search(result.text))


@dataclass
class ScriptRunner:
    """Chooses each answer from the request alone, plus which turn of the script each prompt is on."""

    script: Script
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _index: int = -1
    _turn_of_prompt: dict[str, int] = field(default_factory=dict)
    _calls: int = 0

    def answer(self, conversation: Conversation) -> Reply | RateLimit | Error:
        is_main = bool(conversation.tools) or wants_edit_blocks(conversation.system)
        if not is_main:  # a side request (title, quota probe, commit message, next-speaker check): answer, keep the turn
            action = self._current()
            if isinstance(action, (RateLimit, Error)):
                return action
            return side_reply(conversation)
        action = self._action_for(conversation)
        if isinstance(action, (RateLimit, Error)):
            return action
        if isinstance(action, Nothing):
            return Reply(f"{LABEL} {action.text}")
        return self._write_step(conversation, action)

    def _current(self) -> Action:
        with self._lock:
            return self.script.turns[min(max(self._index, 0), len(self.script.turns) - 1)]

    def _action_for(self, conversation: Conversation) -> Action:
        key = hashlib.sha256(conversation.prompt.encode()).hexdigest()
        with self._lock:
            if not conversation.is_continuation or key not in self._turn_of_prompt:
                self._index += 1
                self._turn_of_prompt[key] = min(self._index, len(self.script.turns) - 1)
            return self.script.turns[self._turn_of_prompt[key]]

    def _new_call_id(self) -> str:
        with self._lock:
            self._calls += 1
            return f"call_scripted_{self._calls:04d}"

    def _write_step(self, conversation: Conversation, action: Write) -> Reply:
        root = self.script.root or find_cwd(conversation.strings)
        files = tuple(target(path, content, root) for path, content in action.pairs)
        if not conversation.tools:
            return Reply(f"{LABEL}\n\n{aider_edit_text(conversation.system, files)}")
        tool = pick_write_tool(conversation.tools, action.tool)
        if tool is None:
            offered = ", ".join(t.name for t in conversation.tools)
            return Reply(f"{LABEL} I cannot write files: none of the offered tools writes one ({offered}).")
        calls, results = _turn_history(conversation)
        pairs = zip(calls, results, strict=True)
        written = sum(1 for call, result in pairs if call.name == tool.name and result is not None and not failed(result))
        last_call, last_result = (calls[-1], results[-1]) if calls else (None, None)
        if written >= len(files):
            return Reply(f"{LABEL} Wrote {', '.join(f.relative for f in files)}. {action.reply}")
        if len(calls) > 2 * len(files) + 2:
            return Reply(f"{LABEL} Giving up: the write tool kept failing.")
        if last_call is not None and last_call.name == tool.name and last_result is not None and failed(last_result):
            return self._after_failed_write(conversation, files[written], calls, last_result)
        return Reply(f"{LABEL} Writing {files[written].relative}.", (write_call(tool, files[written], self._new_call_id()),))

    def _after_failed_write(self, conversation: Conversation, file: Target, calls: list[ToolCall], result: ToolResult) -> Reply:
        reader = pick_read_tool(conversation.tools)
        already_read = any(reader is not None and c.name == reader.name for c in calls)
        if reader is not None and _READ_FIRST.search(result.text) and not already_read:
            return Reply(
                f"{LABEL} Reading {file.relative} first, as the tool asks.", (read_call(reader, file, self._new_call_id()),)
            )
        return Reply(f"{LABEL} The write tool failed: {result.text[:500]}")


def _turn_history(conversation: Conversation) -> tuple[list[ToolCall], list[ToolResult | None]]:
    """The tool calls made since the turn's prompt, each with its result (matched by id, else by name in order)."""
    since = conversation.messages[conversation.turn_start + 1 :]
    calls = [c for m in since for c in m.calls]
    unpaired = [r for m in since for r in m.results]
    paired: list[ToolResult | None] = []
    for call in calls:
        match = next((r for r in unpaired if r.call_id and r.call_id == call.id), None)
        match = match or next((r for r in unpaired if not r.call_id and r.name == call.name), None)
        if match is not None:
            unpaired.remove(match)
        paired.append(match)
    return calls, paired


def side_reply(conversation: Conversation) -> Reply:
    if conversation.json_schema is not None:
        return Reply(json.dumps(instance_of(conversation.json_schema)))
    return Reply(f"{LABEL} (side request answered with text)")


def instance_of(schema: Mapping[str, Any]) -> Any:
    """A small value that fits a JSON schema (gemini-cli's next-speaker check asks for one): the first enum value."""
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    kind = kind.lower() if isinstance(kind, str) else kind
    if kind == "object" or "properties" in schema:
        props: Mapping[str, Any] = schema.get("properties", {})
        return {name: instance_of(props[name]) for name in _required(schema, props)}
    defaults: dict[Any, Any] = {"array": [], "integer": 0, "number": 0, "boolean": False, "null": None}
    return defaults.get(kind, LABEL)


def _required(schema: Mapping[str, Any], props: Mapping[str, Any]) -> Iterable[str]:
    return [name for name in schema.get("required", list(props)) if name in props]
