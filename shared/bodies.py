"""The bodies of model calls, kept by content: build_loop's state/build/bodies/ab/cdef... (sha256 of the bytes).

Written once, by a rename of a complete file, so a reader finds the whole body or nothing; the same body (a CLI's
system prompt, sent on every call) is stored once. The gateway names a body at once (its digest goes into the
call's record) and leaves the writing to a writer thread, so that no call waits on the disk: `flush()` (at the end
of every turn) waits until all is written. No fsync per body: a body is evidence for a person, not part of a
verdict; the journal, which holds the digests, is what is made durable."""
from __future__ import annotations

import hashlib
import os
import queue
import tempfile
import threading
from pathlib import Path


class BodyStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._pending: queue.Queue[tuple[str, bytes] | None] = queue.Queue()
        self._writer: threading.Thread | None = None
        self._lock = threading.Lock()

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest[2:]

    def put(self, data: bytes) -> str:
        """Write the body now; returns its digest."""
        digest = hashlib.sha256(data).hexdigest()
        self._write(digest, data)
        return digest

    def put_later(self, data: bytes) -> str:
        """Name the body now and write it on the writer thread; returns its digest."""
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            if self._writer is None:
                self._writer = threading.Thread(target=self._drain, name="banach-body-writer", daemon=True)
                self._writer.start()
        self._pending.put((digest, data))
        return digest

    def flush(self) -> None:
        """Wait until every body handed to put_later is written."""
        self._pending.join()

    def _drain(self) -> None:
        while True:
            item = self._pending.get()
            try:
                if item is not None:
                    self._write(*item)
            except OSError:
                pass  # a body that cannot be written shows as "not in the store" in the transcript
            finally:
                self._pending.task_done()

    def _write(self, digest: str, data: bytes) -> None:
        target = self.path(digest)
        if target.exists():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".incoming-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

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
