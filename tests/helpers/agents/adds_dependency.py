"""SIMULATED agent (a scripted stand-in for an LLM): writes mod.py and a requirements.txt naming the requirement given
as its argument, as a model adding a dependency to the project would."""
import sys
from pathlib import Path

Path("mod.py").write_text("VALUE = 1\n")
Path("requirements.txt").write_text(sys.argv[1] + "\n")
print("SIMULATED agent: wrote mod.py and requirements.txt with", sys.argv[1])
