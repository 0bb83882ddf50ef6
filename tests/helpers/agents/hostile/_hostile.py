"""What the hostile agents share: the same helpers as the scripted agents, found from this folder."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _lib import apply, git, try_write  # noqa: E402,F401

WORKSPACE = Path.cwd().parent  # the agent runs in the work tree, which sits in the workspace


def marker(name: str) -> str:
    """A file in the workspace root that only code running outside the sandbox could create."""
    return str(WORKSPACE / f"PWNED-{name}")


def write(path: str, text: str, mode: int | None = None) -> None:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        if mode is not None:
            target.chmod(mode)
        print(f"WROTE {path}")
    except OSError as exc:
        print(f"DENIED {path}: {exc.strerror}")


def known_tests(canon: Path) -> list[list[str]]:
    """The canon tests an agent read in its turn, each as the sorted reprs of its constants: what a forger that knows
    them by content (the run renames every test, so names tell it nothing) compares a test of the run with."""
    import ast

    found = []
    for path in sorted(canon.rglob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                found.append(sorted(repr(inner.value) for inner in ast.walk(node) if isinstance(inner, ast.Constant)))
    return found


def option(argv: list[str], name: str, default: str) -> tuple[list[str], str]:
    """The value after `name` in argv (or `default`), and argv without the two."""
    if name not in argv:
        return argv, default
    at = argv.index(name)
    return argv[:at] + argv[at + 2:], argv[at + 1]
