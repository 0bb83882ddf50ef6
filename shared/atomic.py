"""Write files so that a reader sees the old content or the new, never half of either."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from shared.errors import LockBusy


def write_text(path: Path, text: str, *, private: bool = False) -> None:
    """private: the file is its owner's alone (0600, from its first byte: a key, a password); otherwise 0644, so that
    the other roles' accounts read it under the users backend (fix_plan, build's readings)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # 0600
    try:
        if not private:
            os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: Path, value: Any) -> None:
    write_text(path, json.dumps(value, indent=2, sort_keys=True) + "\n")


@contextlib.contextmanager
def file_lock(path: Path, *, wait: bool = True, what: str = "this step") -> Iterator[None]:
    """An advisory lock held for the duration of the block; released by the kernel if we die."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        flags = fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB
        try:
            fcntl.flock(fd, flags)
        except BlockingIOError:
            raise LockBusy(f"{path} is held by another process; {what} waits for it. Try again shortly.") from None
        yield
    finally:
        os.close(fd)
