"""One append-only SQLite journal per role, each row hash-chained to the one before.

The only module that imports sqlite-utils. A row is (seq, ts, kind, data, prev, hash, receipt):
hash = sha256(prev + canonical JSON of seq, ts, kind, data); receipt = HMAC-SHA256 of hash under
the role's key, so a program outside the loop can check a governor decision was the loop's own.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_utils
from sqlite_utils.migrations import Migrations

from shared.atomic import file_lock
from shared.errors import JournalError

GENESIS = "0" * 64
TABLE = "rows"

migrations = Migrations("banach.journal")


@migrations()
def m001_rows(db: sqlite_utils.Database) -> None:
    db[TABLE].create(  # type: ignore[union-attr]
        {"seq": int, "ts": float, "kind": str, "data": str, "prev": str, "hash": str, "receipt": str},
        pk="seq",
    )
    db[TABLE].create_index(["kind"])  # type: ignore[union-attr]


@dataclass(frozen=True)
class Row:
    seq: int
    ts: float
    kind: str
    data: dict[str, Any]
    prev: str
    hash: str
    receipt: str


@dataclass(frozen=True)
class Verdict:
    ok: bool
    rows: int
    first_bad: int | None = None
    reason: str = ""


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def row_hash(prev: str, seq: int, ts: float, kind: str, data_json: str) -> str:
    body = canonical({"seq": seq, "ts": ts, "kind": kind, "data": data_json})
    return hashlib.sha256((prev + body).encode()).hexdigest()


def sign(key: bytes, digest: str) -> str:
    return hmac.new(key, digest.encode(), hashlib.sha256).hexdigest()


def _wrap(exc: BaseException, path: Path, doing: str) -> JournalError:
    hint = "the disk may be full; free space and restart the loop" if "full" in str(exc).lower() else (
        "check the file is a Banach journal and that this role may write it"
    )
    return JournalError(f"{path}: cannot {doing}: {exc}. Nothing was half-written: {hint}.")


class Journal:
    """A role's journal. Writers append; readers open it read-only."""

    def __init__(self, path: Path, *, key: bytes | None = None, readonly: bool = False) -> None:
        self.path = path
        self.key = key
        self.readonly = readonly
        try:
            if readonly:
                conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(path, timeout=30)
            self.db = sqlite_utils.Database(conn)
            if not readonly:
                # sqlite-utils computes the pending migrations before it applies them, so two processes opening a
                # new journal at once would both create its table; the role's spec-loop add and edit can do that.
                with file_lock(path.with_name(path.name + ".migrate.lock"), what="opening the journal"):
                    migrations.apply(self.db)
        except (sqlite3.Error, OSError) as exc:
            raise _wrap(exc, path, "open the journal") from None

    @classmethod
    def reader(cls, path: Path) -> Journal | None:
        """A read-only view, or None when the role has not written anything yet."""
        if not path.exists():
            return None
        journal = cls(path, readonly=True)
        if not journal.db[TABLE].exists():  # created a moment ago; its first migration has not run yet
            journal.close()
            return None
        return journal

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _last(self) -> tuple[int, str]:
        row = self.db.execute(f"SELECT seq, hash FROM {TABLE} ORDER BY seq DESC LIMIT 1").fetchone()
        return (row[0], row[1]) if row else (0, GENESIS)

    def append(self, kind: str, data: dict[str, Any]) -> Row:
        if self.readonly:
            raise JournalError(f"{self.path} is open read-only; only its role writes it")
        data_json = canonical(data)
        conn = self.db.conn
        try:
            # IMMEDIATE takes the write lock before reading the chain's tip. A deferred transaction would read
            # under a shared lock and then fail to upgrade (SQLITE_BUSY, no waiting) when another writer of
            # this journal, say spec-loop add beside the spec-loop daemon, did the same.
            conn.execute("BEGIN IMMEDIATE")
            try:
                last_seq, prev = self._last()
                seq, ts = last_seq + 1, round(time.time(), 6)
                digest = row_hash(prev, seq, ts, kind, data_json)
                receipt = sign(self.key, digest) if self.key else ""
                conn.execute(
                    f"INSERT INTO {TABLE} (seq, ts, kind, data, prev, hash, receipt) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [seq, ts, kind, data_json, prev, digest, receipt],
                )
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
        except (sqlite3.Error, OSError) as exc:
            raise _wrap(exc, self.path, f"append a '{kind}' row") from None
        return Row(seq, ts, kind, data, prev, digest, receipt)

    @contextlib.contextmanager
    def step(self, kind: str, data: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """A step leaves a '<kind>.started' row now and a '<kind>.ended' row in finally, even when interrupted.

        The block fills the yielded dict with its outcome; an exception is recorded as the outcome.
        """
        started = self.append(f"{kind}.started", data)
        outcome: dict[str, Any] = {"started_seq": started.seq}
        try:
            yield outcome
        except BaseException as exc:
            outcome.setdefault("outcome", "error")
            outcome["error"] = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self.append(f"{kind}.ended", outcome)

    def rows(self, kind: str | None = None, *, since: int = 0, prefix: bool = False) -> list[Row]:
        try:
            if kind is None:
                cursor = self.db.execute(f"SELECT * FROM {TABLE} WHERE seq > ? ORDER BY seq", [since])
            elif prefix:
                cursor = self.db.execute(
                    f"SELECT * FROM {TABLE} WHERE kind LIKE ? AND seq > ? ORDER BY seq", [kind + "%", since]
                )
            else:
                cursor = self.db.execute(
                    f"SELECT * FROM {TABLE} WHERE kind = ? AND seq > ? ORDER BY seq", [kind, since]
                )
            return [_row(values) for values in cursor.fetchall()]
        except sqlite3.Error as exc:
            raise _wrap(exc, self.path, "read rows") from None

    def count(self, kind: str) -> int:
        return int(self.db.execute(f"SELECT COUNT(*) FROM {TABLE} WHERE kind = ?", [kind]).fetchone()[0])

    def last(self, kind: str) -> Row | None:
        cursor = self.db.execute(f"SELECT * FROM {TABLE} WHERE kind = ? ORDER BY seq DESC LIMIT 1", [kind])
        values = cursor.fetchone()
        return _row(values) if values else None

    def verify(self, *, key: bytes | None = None) -> Verdict:
        """Recompute the chain (and, given the role's key, every receipt); name the first row that fails."""
        prev, expected_seq, count = GENESIS, 1, 0
        try:
            cursor = self.db.execute(f"SELECT seq, ts, kind, data, prev, hash, receipt FROM {TABLE} ORDER BY seq")
            for seq, ts, kind, data_json, stored_prev, stored_hash, receipt in cursor:
                count += 1
                if seq != expected_seq:
                    return Verdict(False, count, expected_seq, f"row {expected_seq} is missing (next is {seq})")
                if stored_prev != prev:
                    return Verdict(False, count, seq, "its 'prev' does not match the hash of the row before")
                if row_hash(prev, seq, ts, kind, data_json) != stored_hash:
                    return Verdict(False, count, seq, "its content does not match its hash (the row was changed)")
                if key is not None and not hmac.compare_digest(sign(key, stored_hash), receipt or ""):
                    return Verdict(False, count, seq, "its receipt does not verify under the role's key")
                prev, expected_seq = stored_hash, seq + 1
        except sqlite3.Error as exc:
            return Verdict(False, count, expected_seq, f"the file cannot be read as a journal: {exc}")
        return Verdict(True, count)


def _row(values: tuple[Any, ...]) -> Row:
    seq, ts, kind, data_json, prev, digest, receipt = values
    return Row(seq, ts, kind, json.loads(data_json), prev, digest, receipt or "")


def load_or_create_key(path: Path) -> bytes:
    """The role's receipt key, created on first use with mode 0600."""
    with contextlib.suppress(FileNotFoundError):
        return path.read_bytes()
    # Written whole under a private name, then linked into place: link fails if another process won the race,
    # and nobody ever reads a key file that is still being written.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(os.urandom(32))
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        os.unlink(tmp)
    return path.read_bytes()


class Memo:
    """A small key -> JSON store beside a journal (plan's check memo). Losing it costs time, never truth."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite_utils.Database(sqlite3.connect(path, timeout=30, check_same_thread=False))
        self.db["memo"].create({"key": str, "value": str, "ts": float}, pk="key", if_not_exists=True)  # type: ignore[union-attr]

    def get(self, key: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT value FROM memo WHERE key = ?", [key]).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        with self.db.atomic():
            self.db["memo"].upsert({"key": key, "value": canonical(value), "ts": time.time()}, pk="key")  # type: ignore[union-attr]

    def close(self) -> None:
        self.db.close()
