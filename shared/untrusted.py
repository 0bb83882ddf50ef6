"""Reading a file a sandboxed child wrote (or could still be writing), without trusting what stands at its path.

    data = read_untrusted(path, limit)   # bytes, or None when it is not a plain file of at most limit bytes

The folder and the file are each opened without following a link, and the file without blocking (a FIFO never
wedges the reader); what is read is what was opened, so a link swapped in after a check is never followed."""
from __future__ import annotations

import os
import stat
from pathlib import Path


def read_untrusted(path: Path, limit: int) -> bytes | None:
    try:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fd = os.open(path.name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return None
    finally:
        os.close(folder)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None
