"""The right change, plus edits outside the item's scope."""
from pathlib import Path

from _lib import apply

print("wrote", apply())
with open("README.md", "a") as handle:
    handle.write("\nout of scope\n")
Path("textkit/extra.py").write_text("X = 1\n")
