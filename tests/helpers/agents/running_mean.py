"""SIMULATED agent (a scripted stand-in for an LLM) for the vendored more-itertools in tests/test_third_party.py.

For requirement MI-1 (`more_itertools.running_mean`) it edits more_itertools/recipes.py as a model might: the
first iteration writes a stub that raises (no progress: the governor rolls it back), every later one the right
function. Anything else it is asked for, it leaves alone.
"""
import os
import re
from pathlib import Path

STUB = '''

def running_mean(iterable):
    """Yield the mean of the items seen so far."""
    raise NotImplementedError("running_mean")
'''
RIGHT = '''

def running_mean(iterable):
    """Yield the mean of the items seen so far.

        >>> list(running_mean([2, 4, 6]))
        [2.0, 3.0, 4.0]

    """
    total = 0
    for count, item in enumerate(iterable, 1):
        total += item
        yield total / count
'''

prompt = Path(os.environ["BANACH_PROMPT_FILE"]).read_text()
asked = re.search(r"^Requirements:\s*(.+)$", prompt, re.M)
if asked is None or "MI-1" not in asked.group(1):
    print("SIMULATED agent: nothing I know how to do here")
    raise SystemExit(0)
recipes = Path("more_itertools/recipes.py")
text = recipes.read_text()
if "'running_mean'," not in text:
    text = text.replace("    'roundrobin',\n", "    'roundrobin',\n    'running_mean',\n", 1)
first = os.environ.get("BANACH_ITERATION") == "1"
recipes.write_text(text.rstrip("\n") + "\n" + (STUB if first else RIGHT))
print("SIMULATED agent: wrote", "a stub of" if first else "", "running_mean in", recipes)
