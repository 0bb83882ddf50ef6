"""A hostile agent in a lane (build.workers > 1): it tries to write main's work tree, the other lanes' work trees and
its own lane's git directory, then does the item's work (parts.py's) so its turn is judged like any other."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _lib import prompt, try_write  # noqa: E402

lane = Path.cwd()  # state/build/lanes/K/tree
root = lane.parents[4]  # the workspace
targets = [root / "code" / "planted.txt", lane.parent / "code.git" / "HEAD"]
lanes = lane.parents[1]  # by number: in a turn's view the other lanes are not even listed
targets += [lanes / str(k) / "tree" / "planted.txt" for k in range(1, 5) if lanes / str(k) != lane.parent]
for target in targets:
    print(try_write(str(target), "planted by another lane's agent\n"))
for rid in __import__("re").findall(r"P-(\d+)", prompt().split("Requirements:", 1)[1].splitlines()[0]):
    Path("parts").mkdir(exist_ok=True)
    Path(f"parts/p{rid}.txt").write_text(f"part {rid}\n")
