"""Fixes clamp() in lib/frames.py, a library that has always read stack frames, by the one-line upstream fix 27
lines below its old frame read; with `spy`, it also adds a frame read of its own below the fix.

    frame_fix.py [spy]
"""
import sys
from pathlib import Path

SPY = '''

def calling_test():
    """The test that called, read from its frame (what code under test has no business doing)."""
    return sys._getframe(2).f_locals.get("request")
'''
library = Path("lib/frames.py")
text = library.read_text().replace("min(value, high + 1)", "min(value, high)")
library.write_text(text + (SPY if sys.argv[1:] == ["spy"] else ""))
print("fixed clamp" + (" and added a frame read" if sys.argv[1:] == ["spy"] else ""))
