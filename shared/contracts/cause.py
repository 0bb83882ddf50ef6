"""The line of a check's output that says why it fails, for a person: pytest's `E` line with the statement and the
file:line it points at, or, for any other command, its last words. Build journals it with a block; status, `banach
run`, the dashboard and the demo show it instead of the turn's decision ("the turn left no change in scope"), which
says what the agent did, not what is wrong."""
from __future__ import annotations

import re
from collections.abc import Mapping

E_LINE = re.compile(r"^E\s+(?P<text>\S.*?)\s*$")
STATEMENT = re.compile(r"^>\s+(?P<text>\S.*?)\s*$")
LOCATION = re.compile(r"^(?P<path>[^\s:]+\.py):(?P<line>\d+):\s")
HEADER = re.compile(r"^_{3,}\s+(?P<text>\S.*?)\s+_{3,}$")
# What Banach's own runner adds under pytest's output: it names tests, it is not a cause
OWN_LINES = ("did not pass: ", "could not be collected: ", "passed: ", "canary ")
NOISE = re.compile(r"^(=+.*=+|-+|\d+ (failed|passed|error|errors)\b.*|FAILED .*|ERROR .*|short test summary.*|\s*)$")
WIDTH = 240


def _short_path(path: str) -> str:
    """A test's path as canon names it, not where a loop's scratch export happened to put it."""
    return re.sub(r"^.*?/(?:canon|export)/(?:[0-9a-f]{6,}/)?", "", path).removeprefix("../")


def from_output(text: str) -> str:
    """One line: where and why the output says it fails; "" when it says nothing."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        error = E_LINE.match(line)
        if not error:
            continue
        statement = next((STATEMENT.match(lines[j]) for j in range(index - 1, max(index - 40, -1), -1)
                          if STATEMENT.match(lines[j])), None)
        after = (LOCATION.match(lines[j]) for j in range(index + 1, min(index + 60, len(lines))))
        before = (LOCATION.match(lines[j]) for j in range(index - 1, max(index - 40, -1), -1))
        where = next((m for m in after if m), None) or next((m for m in before if m), None)
        test = next((HEADER.match(lines[j])["text"] for j in range(index - 1, max(index - 80, -1), -1)  # type: ignore[index]
                     if HEADER.match(lines[j])), "")
        said = error["text"].removeprefix("AssertionError: ")
        if statement and not said.startswith(("assert ", "AssertionError")):
            said = f"{statement['text']}: {said}"
        elif statement:
            said = f"{statement['text']} -> {said}"
        place = f"{_short_path(where['path'])}:{where['line']}" if where else ""
        named = test if test and not test.startswith("ERROR collecting") else ""
        return _fit(", ".join(part for part in (place, named) if part) + (": " if place or named else "") + said)
    meaningful = [line.strip() for line in lines if line.strip() and not line.startswith(OWN_LINES)
                  and not NOISE.match(line)]
    return _fit(meaningful[-1]) if meaningful else ""


def _fit(line: str) -> str:
    return line if len(line) <= WIDTH else line[:WIDTH - 3] + "..."


def from_excerpts(excerpts: Mapping[str, str] | None, failing: list[str] | None = None) -> str:
    """The cause across a reading's failing checks (name -> output): the first that says why, named by its check."""
    for _check, text in sorted((excerpts or {}).items()):
        said = from_output(text or "")
        if said:
            return said
    if failing:
        more = f" (and {len(failing) - 1} more)" if len(failing) > 1 else ""
        return f"{_check_name(failing[0])} fails, printing nothing{more}"
    return ""


def _check_name(identity: str) -> str:
    """A sensor identity as a person reads it: 'canon:ST-2:check:1 grep -qx right f' -> the check `grep -qx right f`."""
    check = re.match(r"^canon:(?P<req>[^:]+):check:(?P<n>\d+)(?: (?P<command>.+))?$", identity)
    if check:
        return f"the check `{check['command']}`" if check["command"] else f"{check['req']}'s check {check['n']}"
    return identity.split("::", 1)[1] if "::" in identity else identity
