"""One append-only SQLite journal per role, each row hash-chained to the one before.

The only module that imports sqlite-utils. A row is (seq, ts, kind, data, anchors, prev, hash, receipt):
hash = sha256(prev + canonical JSON of seq, ts, kind, data and, when present, anchors); receipt =
HMAC-SHA256 of hash under the role's key, so a program outside the loop can check a governor decision
was the loop's own.

anchors are the other roles' journal heads, {role: [seq, hash]}, read as the row is written. A role
cannot rewrite the rows of another role, so its anchors pin the other journals: `banach journal verify`
finds a journal that was deleted, cut short or replaced, even by someone holding that role's key.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import os
import sqlite3
import stat
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlite_utils
from sqlite_utils.migrations import Migrations

from shared.atomic import file_lock
from shared.errors import JournalError

if TYPE_CHECKING:
    from shared.workspace import Role, Workspace

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


@migrations()
def m002_anchors(db: sqlite_utils.Database) -> None:
    # Rows written before this column existed keep '' and hash exactly as they did, so old journals verify.
    db[TABLE].add_column("anchors", str, not_null_default="")  # type: ignore[union-attr]


@dataclass(frozen=True)
class Row:
    seq: int
    ts: float
    kind: str
    data: dict[str, Any]
    prev: str
    hash: str
    receipt: str
    anchors_source: Mapping[str, tuple[int, str]] | str = field(default_factory=dict, repr=False)

    @functools.cached_property
    def anchors(self) -> Mapping[str, tuple[int, str]]:
        """Parsed when first asked for: few readers look, and parsing them was 40% of reading rows (a profile of
        `banach status` over 30,000 rows)."""
        source = self.anchors_source
        return _anchors(source) if isinstance(source, str) else source


@dataclass(frozen=True)
class Anchor:
    """Row voucher_seq of the voucher's journal saw `role`'s journal end at row seq with this hash."""

    voucher: str
    voucher_seq: int
    role: str
    seq: int
    hash: str


@dataclass(frozen=True)
class Verdict:
    ok: bool
    rows: int
    first_bad: int | None = None
    reason: str = ""


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def row_hash(prev: str, seq: int, ts: float, kind: str, data_json: str, anchors_json: str = "") -> str:
    fields: dict[str, Any] = {"seq": seq, "ts": ts, "kind": kind, "data": data_json}
    if anchors_json:
        fields["anchors"] = anchors_json
    return hashlib.sha256((prev + canonical(fields)).encode()).hexdigest()


def _readonly_uri(path: Path) -> str:
    return path.absolute().as_uri() + "?mode=ro"


def is_journal_file(path: Path) -> bool:
    """A regular file, not a symlink: a FIFO would block the reader forever and a link would let the role that
    owns the folder point its journal at any file."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def head(path: Path) -> tuple[int, str] | None:
    """The last (seq, hash) of a journal, read-only; None when it has no rows or cannot be read right now."""
    if not is_journal_file(path):
        return None
    try:
        conn = sqlite3.connect(_readonly_uri(path), uri=True, timeout=2)
        try:
            row = conn.execute(f"SELECT seq, hash FROM {TABLE} ORDER BY seq DESC LIMIT 1").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None  # no table yet, locked past the timeout, or not SQLite: this row anchors the others only
    return (int(row[0]), str(row[1])) if row else None


def sign(key: bytes, digest: str) -> str:
    return hmac.new(key, digest.encode(), hashlib.sha256).hexdigest()


def _wrap(exc: BaseException, path: Path, doing: str) -> JournalError:
    hint = "the disk may be full; free space and restart the loop" if "full" in str(exc).lower() else (
        "check the file is a Banach journal and that this role may write it"
    )
    return JournalError(f"{path}: cannot {doing}: {exc}. Nothing was half-written: {hint}.")


class Journal:
    """A role's journal. Writers append; readers open it read-only."""

    def __init__(self, path: Path, *, key: bytes | None = None, readonly: bool = False,
                 peers: Mapping[str, Path] | None = None) -> None:
        """peers: the other roles' journals, whose heads every appended row records as its anchors."""
        self.path = path
        self.key = key
        self.readonly = readonly
        self.peers = dict(peers or {})
        try:
            if readonly:
                conn = sqlite3.connect(_readonly_uri(path), uri=True, timeout=30)
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
    def for_role(cls, ws: Workspace, role: Role) -> Journal:
        """The role's own journal: written with its key, every row anchoring the other roles' journals."""
        from shared.workspace import ROLES

        peers: dict[str, Path] = {other: ws.journal_path(other) for other in ROLES if other != role}
        return cls(ws.journal_path(role), key=load_or_create_key(ws.keys_dir / f"{role}.key"), peers=peers)

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
        # Read before taking our own write lock; every append pays one SELECT per peer (about 0.2 ms each), which
        # is noise beside a build iteration and keeps the window an erasure could hide in as short as possible.
        anchors = {role: found for role, path in sorted(self.peers.items()) if (found := head(path)) is not None}
        anchors_json = canonical({role: list(pair) for role, pair in anchors.items()}) if anchors else ""
        conn = self.db.conn
        try:
            # IMMEDIATE takes the write lock before reading the chain's tip. A deferred transaction would read
            # under a shared lock and then fail to upgrade (SQLITE_BUSY, no waiting) when another writer of
            # this journal, say spec-loop add beside the spec-loop daemon, did the same.
            conn.execute("BEGIN IMMEDIATE")
            try:
                last_seq, prev = self._last()
                seq, ts = last_seq + 1, round(time.time(), 6)
                digest = row_hash(prev, seq, ts, kind, data_json, anchors_json)
                receipt = sign(self.key, digest) if self.key else ""
                conn.execute(
                    f"INSERT INTO {TABLE} (seq, ts, kind, data, anchors, prev, hash, receipt) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [seq, ts, kind, data_json, anchors_json, prev, digest, receipt],
                )
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
        except (sqlite3.Error, OSError) as exc:
            raise _wrap(exc, self.path, f"append a '{kind}' row") from None
        return Row(seq, ts, kind, data, prev, digest, receipt, anchors)

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

    def _columns(self) -> str:
        """The columns in Row order; a journal written before anchors existed, read-only, reads '' for them."""
        names = {row[1] for row in self.db.execute(f"PRAGMA table_info({TABLE})").fetchall()}
        anchors = "anchors" if "anchors" in names else "'' AS anchors"
        return f"seq, ts, kind, data, prev, hash, receipt, {anchors}"

    def rows(self, kind: str | None = None, *, since: int = 0, prefix: bool = False) -> list[Row]:
        try:
            columns = self._columns()
            if kind is None:
                cursor = self.db.execute(f"SELECT {columns} FROM {TABLE} WHERE seq > ? ORDER BY seq", [since])
            elif prefix:
                cursor = self.db.execute(
                    f"SELECT {columns} FROM {TABLE} WHERE kind LIKE ? AND seq > ? ORDER BY seq", [kind + "%", since]
                )
            else:
                cursor = self.db.execute(
                    f"SELECT {columns} FROM {TABLE} WHERE kind = ? AND seq > ? ORDER BY seq", [kind, since]
                )
            return [_row(values) for values in cursor.fetchall()]
        except sqlite3.Error as exc:
            raise _wrap(exc, self.path, "read rows") from None

    def page(self, kind: str, *, limit: int, offset: int = 0, contains: str = "") -> tuple[list[Row], int]:
        """Rows of one kind, newest first, `limit` from `offset`, whose data holds `contains`; and how many match."""
        where, args = "kind = ? AND instr(lower(data), lower(?)) > 0", [kind, contains]
        try:
            total = int(self.db.execute(f"SELECT COUNT(*) FROM {TABLE} WHERE {where}", args).fetchone()[0])
            cursor = self.db.execute(f"SELECT {self._columns()} FROM {TABLE} WHERE {where} ORDER BY seq DESC "
                                     "LIMIT ? OFFSET ?", [*args, limit, offset])
            return [_row(values) for values in cursor.fetchall()], total
        except sqlite3.Error as exc:
            raise _wrap(exc, self.path, "read a page of rows") from None

    def count(self, kind: str) -> int:
        return int(self.db.execute(f"SELECT COUNT(*) FROM {TABLE} WHERE kind = ?", [kind]).fetchone()[0])

    def last(self, kind: str) -> Row | None:
        cursor = self.db.execute(f"SELECT {self._columns()} FROM {TABLE} WHERE kind = ? ORDER BY seq DESC LIMIT 1",
                                 [kind])
        values = cursor.fetchone()
        return _row(values) if values else None

    def hashes(self) -> dict[int, str]:
        """Every row's hash by seq: what the other journals' anchors are checked against."""
        try:
            return {int(seq): str(digest) for seq, digest in self.db.execute(f"SELECT seq, hash FROM {TABLE}")}
        except sqlite3.Error as exc:
            raise _wrap(exc, self.path, "read its hashes") from None

    def anchors(self, voucher: str) -> list[Anchor]:
        """The other journals' heads this journal (written by role `voucher`) recorded, in row order.

        A malformed anchor is skipped here; it is part of its row's hash, so the chain check still covers it."""
        found: list[Anchor] = []
        if "anchors" not in self._columns().split(", "):
            return found
        try:
            cursor = self.db.execute(f"SELECT seq, anchors FROM {TABLE} WHERE anchors != '' ORDER BY seq")
            for seq, anchors_json in cursor:
                for role, pair in _anchors(anchors_json).items():
                    found.append(Anchor(voucher, int(seq), role, pair[0], pair[1]))
        except sqlite3.Error as exc:
            raise _wrap(exc, self.path, "read its anchors") from None
        return found

    def verify(self, *, key: bytes | None = None) -> Verdict:
        """Recompute the chain (and, given the role's key, every receipt); name the first row that fails."""
        prev, expected_seq, count = GENESIS, 1, 0
        try:
            cursor = self.db.execute(f"SELECT {self._columns()} FROM {TABLE} ORDER BY seq")
            for seq, ts, kind, data_json, stored_prev, stored_hash, receipt, anchors_json in cursor:
                count += 1
                if seq != expected_seq:
                    return Verdict(False, count, expected_seq, f"row {expected_seq} is missing (next is {seq})")
                if stored_prev != prev:
                    return Verdict(False, count, seq, "its 'prev' does not match the hash of the row before")
                if row_hash(prev, seq, ts, kind, data_json, anchors_json or "") != stored_hash:
                    return Verdict(False, count, seq, "its content does not match its hash (the row was changed)")
                if key is not None and not hmac.compare_digest(sign(key, stored_hash), receipt or ""):
                    return Verdict(False, count, seq, "its receipt does not verify under the role's key")
                prev, expected_seq = stored_hash, seq + 1
        except sqlite3.Error as exc:
            return Verdict(False, count, expected_seq, f"the file cannot be read as a journal: {exc}")
        return Verdict(True, count)


def _anchors(anchors_json: str | None) -> dict[str, tuple[int, str]]:
    try:
        raw = json.loads(anchors_json) if anchors_json else {}
    except ValueError:
        return {}
    if not isinstance(raw, dict):
        return {}
    return {str(role): (pair[0], pair[1]) for role, pair in raw.items()
            if isinstance(pair, list) and len(pair) == 2 and type(pair[0]) is int and isinstance(pair[1], str)}


def _row(values: tuple[Any, ...]) -> Row:
    seq, ts, kind, data_json, prev, digest, receipt, anchors_json = values
    return Row(seq, ts, kind, json.loads(data_json), prev, digest, receipt or "", anchors_json or "")


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
