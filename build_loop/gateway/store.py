"""The bodies of model calls, kept by content: build_loop's state/build/bodies/ab/cdef... (sha256 of the bytes).

Written once, by a rename of a complete file, so a crash leaves either the whole body or nothing; the same body
(a CLI's system prompt, sent on every call) is stored once."""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


class BodyStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest[2:]

    def put(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if target.exists():
            return digest
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".incoming-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return digest

    def get(self, digest: str) -> bytes | None:
        """The body, or None when it is not (or no longer) here. A body whose bytes no longer match its name is
        refused rather than shown as what the model said."""
        try:
            data = self.path(digest).read_bytes()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != digest:
            raise ValueError(f"{self.path(digest)}: its content does not match its digest; the store was altered")
        return data
