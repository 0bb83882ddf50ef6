"""What the scripted agents share: read the prompt like an agent, apply the example's right change."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from build_loop.sim_agent import apply_reference  # noqa: E402


def prompt() -> str:
    return Path(os.environ["BANACH_PROMPT_FILE"]).read_text()


def requirements() -> list[str]:
    match = re.search(r"^Requirements:\s*(.+)$", prompt(), re.M)
    return [r.strip() for r in match.group(1).split(",")] if match else []


def apply(variant: str = "right") -> list[str]:
    return apply_reference(requirements(), variant)


def git(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_AUTHOR_NAME": "agent", "GIT_AUTHOR_EMAIL": "a@a", "GIT_COMMITTER_NAME": "agent",
           "GIT_COMMITTER_EMAIL": "a@a"}
    outside = Path("..") / "state" / "build" / "code.git"
    if not Path(".git").exists() and outside.exists():  # as a hostile agent would: find build's git directory
        env.update({"GIT_DIR": str(outside.resolve()), "GIT_WORK_TREE": str(Path.cwd())})
    return subprocess.run(["git", *args], capture_output=True, text=True, env=env)


def try_write(path: str, text: str) -> str:
    """Attempt a write and say how it went, so the test can read it in the turn's output."""
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
        return f"WROTE {path}"
    except OSError as exc:
        import errno

        return f"DENIED {path}: {errno.errorcode.get(exc.errno, exc.errno)}"


def apply_useless() -> list[str]:
    """A change that looks like work and passes none of TK-1's tests (the example's 'wrong' slug passes one)."""
    Path("textkit").mkdir(exist_ok=True)
    Path("textkit/slug.py").write_text('"""URL slugs."""\n\n\ndef slugify(text: str) -> str:\n    return text\n')
    return ["textkit/slug.py"]
