"""A scripted stand-in for an LLM (no model is called): for each requirement ST-N of its item it writes fileN.txt
holding "done". A requirement whose check wants other content (scripts/long_run.py makes some) is never met: its item
stalls until it is blocked, as a hard item would."""
from pathlib import Path

from _lib import requirements

for rid in requirements():
    Path(f"file{int(rid.split('-')[1])}.txt").write_text("done\n")
