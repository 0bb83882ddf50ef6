"""Solves the easy requirements (ST-1 .. ST-6) and never the hard ones: a wrong basin."""
from pathlib import Path

from _lib import requirements

for rid in requirements():
    number = int(rid.split("-")[1])
    if number <= 6:
        Path(f"file{number}.txt").write_text("done\n")
