"""A change whose environment cannot be built within a turn (issue 40): a dependency, so that the change needs an
environment of its own, and a setup.py that, when the environment's build runs it for the project's metadata, takes
1.5 GiB and then sleeps ten minutes. Before the build was bounded, a turn with turn_timeout 60 took 193 s this way:
the build ran outside the turn's budget, with no memory cap.

    heavy_build.py [MIB [SECONDS]]     (default 1536 and 600)

Bounded by its path: setup.py holds memory and sleeps only inside an environment's build (its cwd is the project's
copy in KEY.building/, KEY 24 hex digits); anywhere else it is a plain setup.py.
"""
from __future__ import annotations

import sys
from pathlib import Path

SETUP = r'''import os, re, time

if re.fullmatch(r"[0-9a-f]{{24}}\.building", os.path.basename(os.path.dirname(os.getcwd()))):
    held = b"x" * ({mib} * 2**20)  # written, so the kernel counts every page
    time.sleep({seconds})
from setuptools import setup
setup(name="textkit", version="0.1", packages=[])
'''


def main(argv: list[str]) -> int:
    mib = int(argv[0]) if argv else 1536
    seconds = int(argv[1]) if len(argv) > 1 else 600
    Path("requirements.txt").write_text("iniconfig\n")
    Path("setup.py").write_text(SETUP.format(mib=mib, seconds=seconds))
    print(f"setup.py holds {mib} MiB and sleeps {seconds} s in the environment's build")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
