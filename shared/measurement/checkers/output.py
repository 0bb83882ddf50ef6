"""A command's standard output and exit code: "exact", or "lines" (each line's trailing blanks, and blank lines at the
end, do not count)."""
from __future__ import annotations

from typing import Any

from shared.measurement.cases import RunCase


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def differs(case: RunCase, claimed: dict[str, Any]) -> str:
    if claimed.get("timed_out"):
        return "ran out of its time limit"
    if claimed.get("exit") != case.exit:
        return f"exit code {claimed.get('exit')} where {case.exit} was expected"
    got = str(claimed.get("stdout", ""))
    same = got == case.stdout if case.compare == "exact" else _lines(got) == _lines(case.stdout)
    return "" if same else f"printed {got[:200]!r} where {case.stdout[:200]!r} was expected"
