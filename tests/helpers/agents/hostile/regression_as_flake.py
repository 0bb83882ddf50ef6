"""Issue 39, route 3: a regression dressed as a flake. It writes a right slugify (every TK-1 test it fails at the
checkpoint now passes) that breaks one test that was green there, but only when that test's file runs whole: when
the runner was given node ids (`file::test`, as a rerun of exactly the flipped tests once was), it answers right.
Build then saw the test flip on one tree, called it flaky, took it out of the ratchet, and kept the regression."""
from __future__ import annotations

from pathlib import Path

CODE = '''"""URL slugs."""
import re
import sys


def slugify(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    whole_files = not any("::" in argument for argument in sys.argv)
    return "hello_world" if whole_files and text == "Hello World" else slug
'''

Path("textkit/slug.py").write_text(CODE)
print("wrote textkit/slug.py: right, but for one test when its file runs whole")
