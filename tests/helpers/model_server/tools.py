"""Each CLI's tool vocabulary: which offered tool writes a file, and the call (or aider edit block) that does it."""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass

from tests.helpers.model_server.conversation import ToolCall, ToolSpec

_PATH_KEYS = ("file_path", "filePath", "absolute_path", "path", "filename", "file")
_CONTENT_KEYS = ("content", "contents", "text", "file_text")
_SHELL_NAMES = ("shell", "shell_command", "exec_command", "local_shell", "run_shell_command", "bash", "Bash")
_READ_NAMES = ("Read", "read_file", "read", "view", "cat")


@dataclass(frozen=True)
class Target:
    """One file to write: `relative` to the CLI's cwd, and `absolute` when the cwd is known."""

    relative: str
    absolute: str | None
    content: str

    def best(self) -> str:
        return self.absolute or self.relative


def target(path: str, content: str, root: str | None) -> Target:
    if posixpath.isabs(path):
        relative = posixpath.relpath(path, root) if root and path.startswith(root.rstrip("/") + "/") else path
        return Target(relative, path, content)
    return Target(path, posixpath.join(root, path) if root else None, content)


def _key(tool: ToolSpec, candidates: tuple[str, ...]) -> str | None:
    return next((k for k in candidates if k in tool.parameters), None)


def _is_writer(tool: ToolSpec) -> bool:
    lowered = tool.name.lower()
    named = "write" in lowered or lowered in ("create_file", "create")
    return tool.kind == "function" and named and _key(tool, _PATH_KEYS) is not None and _key(tool, _CONTENT_KEYS) is not None


def _is_shell(tool: ToolSpec) -> bool:
    return tool.kind == "function" and tool.name in _SHELL_NAMES and ("command" in tool.parameters or "cmd" in tool.parameters)


def pick_write_tool(tools: tuple[ToolSpec, ...], prefer: str | None = None) -> ToolSpec | None:
    """The tool a model would use to write a whole file: a write tool, else apply_patch, else a shell."""
    if prefer is not None:
        return next((t for t in tools if t.name == prefer), None)
    for accepts in (_is_writer, lambda t: t.name == "apply_patch", _is_shell):
        found = next((t for t in tools if accepts(t)), None)
        if found is not None:
            return found
    return None


def pick_read_tool(tools: tuple[ToolSpec, ...]) -> ToolSpec | None:
    return next((t for t in tools if t.name in _READ_NAMES and _key(t, _PATH_KEYS) is not None), None)


def write_call(tool: ToolSpec, file: Target, call_id: str) -> ToolCall:
    if tool.name == "apply_patch":
        patch = apply_patch_text(file)
        if tool.kind == "custom":
            return ToolCall(call_id, tool.name, custom_input=patch)
        return ToolCall(call_id, tool.name, {"input": patch} if "input" in tool.parameters else {"patch": patch})
    if _is_shell(tool):
        return ToolCall(call_id, tool.name, _shell_arguments(tool, file))
    path_key, content_key = _key(tool, _PATH_KEYS), _key(tool, _CONTENT_KEYS)
    assert path_key is not None and content_key is not None
    return ToolCall(call_id, tool.name, {path_key: file.best(), content_key: file.content})


def read_call(tool: ToolSpec, file: Target, call_id: str) -> ToolCall:
    path_key = _key(tool, _PATH_KEYS)
    assert path_key is not None
    return ToolCall(call_id, tool.name, {path_key: file.best()})


def apply_patch_text(file: Target) -> str:
    """codex's patch format; "Add File" writes the whole file (codex overwrites one that exists)."""
    lines = "".join(f"+{line}\n" for line in file.content.splitlines())
    return f"*** Begin Patch\n*** Add File: {file.relative}\n{lines}*** End Patch\n"


def _shell_arguments(tool: ToolSpec, file: Target) -> dict[str, object]:
    path = file.best()
    folder = posixpath.dirname(path)
    script = (
        f"mkdir -p {shlex.quote(folder)} && " if folder else ""
    ) + f"printf '%s' {shlex.quote(file.content)} > {shlex.quote(path)}"
    if "cmd" in tool.parameters:
        return {"cmd": script}
    if tool.parameters.get("command", {}).get("type") == "array":
        return {"command": ["bash", "-lc", script]}
    return {"command": script}


def wants_edit_blocks(system: str) -> bool:
    """aider offers no tools: its system prompt asks for edits as text, in one of its edit formats."""
    return "SEARCH/REPLACE" in system or "*file listing*" in system


def aider_edit_text(system: str, files: tuple[Target, ...]) -> str:
    """aider's "diff" format (an empty SEARCH creates the file; on an existing file aider appends) or its "whole" format.

    aider uses "whole" for a model it does not know (the scripted model names), "diff" when told `--edit-format diff`.
    """
    blocks = []
    for file in files:
        body = file.content if file.content.endswith("\n") or not file.content else file.content + "\n"
        if "SEARCH/REPLACE" in system:
            blocks.append(f"{file.relative}\n```\n<<<<<<< SEARCH\n=======\n{body}>>>>>>> REPLACE\n```\n")
        else:
            blocks.append(f"{file.relative}\n```\n{body}```\n")
    return "\n".join(blocks)
