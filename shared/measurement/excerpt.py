"""What a person and the next prompt read of a run's output: bounded, from the run's own output only, and never cut
before the line that explains the failure.

    excerpt(output)   the lines that explain (pytest's `E` lines, a collection error's cause), then the tail

A run's output is the code's to write: it is bounded in lines and characters (a single line of a megabyte stays a
few hundred characters), and it is all that comes back from the run (what the run could read is what its view held:
shared/isolation/kinds.py)."""
from __future__ import annotations

import re

LINES = 30  # lines of an excerpt in all
CHARS = 4000  # characters of an excerpt in all
LINE_CHARS = 300  # characters of one line
_EXPLAINS = re.compile(r"^(E {2,}\S|ERROR |FAILED |\S*Error\b|\S*Exception\b|fixture '[^']+' not found|"
                       r"ImportError while importing|collected \d+ items? / \d+ errors?)")
_TAIL_MIN = 10  # at least these last lines, whatever the explanation takes


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + f" [... {len(line) - LINE_CHARS} more characters]"


def excerpt(output: str, *, lines: int = LINES, chars: int = CHARS) -> str:
    """The output whole when it fits; otherwise the explaining lines that come before the tail (at most half the
    excerpt), a marker for what was left out, then the tail; within `lines` lines and `chars` characters."""
    every = [_cut(line.rstrip()) for line in output.strip().splitlines()]
    if len(every) <= lines and sum(len(line) + 1 for line in every) <= chars:
        return "\n".join(every)
    reserve = min(lines // 2, sum(1 for line in every[:-_TAIL_MIN] if _EXPLAINS.match(line.lstrip())))
    tail: list[str] = []
    used = 0
    for line in reversed(every):
        if len(tail) >= lines - 1 - reserve or used + len(line) + 1 > chars * (lines - 1 - reserve) // lines:
            break
        tail.insert(0, line)
        used += len(line) + 1
    explaining: list[str] = []
    for line in every[:len(every) - len(tail)]:
        if len(explaining) < reserve and _EXPLAINS.match(line.lstrip()) and used + len(line) + 1 <= chars - 40:
            explaining.append(line)
            used += len(line) + 1
    left_out = len(every) - len(tail) - len(explaining)
    return "\n".join([*explaining, f"[... {left_out} more lines ...]", *tail] if left_out else [*explaining, *tail])
