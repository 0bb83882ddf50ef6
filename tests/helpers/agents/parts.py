"""A SIMULATED agent (a scripted stand-in for an LLM) for the parallel-worker tests and benchmark.

For each requirement P-NN of its item it writes parts/pNN.txt holding 'part NN', after sleeping --sleep seconds
(standing in for a model's think time). For each requirement R-X it registers a plugin: plugins/x.txt holding the
first name of NAMES that no plugin in its work tree has yet, so two lanes that start from the same base pick the
same name, and the one integrated second breaks the registry's uniqueness on main.
"""
from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from _lib import prompt

NAMES = ("alpha", "beta", "gamma", "delta")


def task_requirements(text: str) -> list[str]:
    match = re.search(r"^Requirements:\s*(.+)$", text, re.M)
    return [r.strip() for r in match.group(1).split(",")] if match else []


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--tag", default="", help="only for finding this agent's processes in a test")
    args = parser.parse_args()
    text = prompt()
    time.sleep(args.sleep)
    for rid in task_requirements(text):
        if rid.startswith("P-"):
            number = rid[2:]
            Path("parts").mkdir(exist_ok=True)
            Path(f"parts/p{number}.txt").write_text(f"part {number}\n")
            print(f"wrote parts/p{number}.txt")
        elif rid.startswith("R-"):
            plugins = Path("plugins")
            plugins.mkdir(exist_ok=True)
            taken = {path.read_text().strip() for path in plugins.glob("*.txt")}
            name = next(n for n in NAMES if n not in taken)
            (plugins / f"{rid[2:].lower()}.txt").write_text(name + "\n")
            print(f"registered {name} for {rid}")
    print("SUCCESS (a simulated agent's claim; it decides nothing)")


if __name__ == "__main__":
    main()
