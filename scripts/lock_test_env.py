"""Rewrite tests/constraints.txt from what is installed: every distribution `banach[test]` needs, at its version.

    pip install -e '.[test]' --upgrade && python -m pytest -q && python scripts/lock_test_env.py

Run it when upgrading the test environment on purpose (in a commit of its own, after the suite passes): the README's
test command installs exactly these versions, so a fresh machine measures with the same tools as CI.
"""
from __future__ import annotations

import importlib.metadata
import re
import sys
from pathlib import Path

from packaging.requirements import Requirement

CONSTRAINTS = Path(__file__).resolve().parent.parent / "tests" / "constraints.txt"
LEFT_OUT = {"pip", "setuptools", "wheel"}  # the installer's own; pinning them fights the venv that runs it


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(root: str, extra: str) -> dict[str, str]:
    """Name -> version of every installed distribution root[extra] needs, itself left out."""
    pins: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    todo = [(root, extra)]
    while todo:
        name, wanted_extra = todo.pop()
        if (_key(name), wanted_extra) in seen:
            continue
        seen.add((_key(name), wanted_extra))
        distribution = importlib.metadata.distribution(name)
        if _key(name) != _key(root):
            pins[_key(distribution.metadata["Name"])] = distribution.version
        for line in distribution.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": wanted_extra}):
                todo += [(requirement.name, e) for e in (requirement.extras or {""})]
    return {name: version for name, version in pins.items() if name not in LEFT_OUT}


def main() -> int:
    header = [line for line in CONSTRAINTS.read_text().splitlines() if line.startswith("#")]
    pins = closure("banach", "test")
    CONSTRAINTS.write_text("\n".join([*header, *(f"{name}=={version}" for name, version in sorted(pins.items()))]) + "\n")
    print(f"{CONSTRAINTS}: {len(pins)} pins")
    return 0


if __name__ == "__main__":
    sys.exit(main())
