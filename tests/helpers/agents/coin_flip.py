"""A scripted stand-in for an LLM (no model is called) whose every attempt is wrong with probability P: for each
requirement ST-N of its item it writes fileN.txt holding "done", or, on a wrong attempt, "wrong". The draw is seeded
by SEED and the iteration number in its prompt, so that a run can be repeated exactly.

    coin_flip.py P SEED
"""
import random
import re
import sys
from pathlib import Path

from _lib import prompt, requirements

iteration = re.search(r"^Iteration:\s*(\d+)", prompt(), re.M)
probability, seed = float(sys.argv[1]), sys.argv[2]
draw = random.Random(f"{seed}:{iteration.group(1) if iteration else 0}").random()
right = draw >= probability
for rid in requirements():
    Path(f"file{int(rid.split('-')[1])}.txt").write_text("done\n" if right else "wrong\n")
print("attempt:", "right" if right else "wrong")
