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
