"""Issue 40, route 1: code that, when a sensor or a check imports it, reads what its run should never reach (another
workspace's plan key and held-back test) and fails with what it read, so that the text travels back in the failure
output: into the turn's feedback, the next prompt, fix_plan, the journal.

    reads_the_machine.py PATH [PATH ...]

Writes textkit/slug.py (TK-1's scope) whose slugify, at import, reads each PATH and raises an AssertionError carrying
the first 200 characters of each it could read ("UNREAD path: why" otherwise). It only reads the paths it was given:
a control run outside a view reaches them, and nothing else of the machine is touched.
"""
from __future__ import annotations

import sys
from pathlib import Path

from _hostile import apply

CODE = '''"""URL slugs."""

_SEEN = []
for _path in {paths!r}:
    try:
        with open(_path, encoding="utf-8", errors="replace") as _file:
            _SEEN.append("READ " + _path + ": " + _file.read(200))
    except OSError as _exc:
        _SEEN.append("UNREAD " + _path + ": " + str(_exc.strerror))


def slugify(text: str) -> str:
    raise AssertionError("what this run could reach: " + " | ".join(_SEEN))
'''


def main(paths: list[str]) -> int:
    apply("right")  # the item's files as a real change would leave them, then slug.py replaced by the reader
    Path("textkit/slug.py").write_text(CODE.format(paths=paths))
    print("wrote textkit/slug.py, which reads " + ", ".join(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
