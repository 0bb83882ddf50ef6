"""Satisfies whichever style requirement it is given, breaking the other: contradictory canon."""
from pathlib import Path

from _lib import requirements

style = {"OS-1": "tabs", "OS-2": "spaces"}
for rid in requirements():
    Path("style.txt").write_text(f"indent={style[rid]}\n")
