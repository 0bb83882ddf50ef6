"""The machine's project environments: each built once per machine for one dependency set (its key), used read-only
by every workspace and role of the machine, and pruned by age and size.

    cache = EnvCache.of(ws, role)
    folder = cache.find(key)               # a complete environment (under the users backend, maybe another role's)
    with cache.building(key, deadline, why) as found:   # one process builds (found is None: the lock is
        folder = found or build(...)                    # its own), the others wait for it and find it
    cache.hold(folder)                     # its last use recorded, and kept from pruning while this process needs it
    cache.prune()                          # the least recently used, beyond [env] keep, past its age or the disk cap

Where: [env] cache, else /var/cache/banach/env under the users backend, else $XDG_CACHE_HOME/banach/env, else
/var/cache/banach/env for root and ~/.cache/banach/env for anyone else. Under the users backend each role account
builds in a folder of its own there (ACCOUNT/, made by setup-users), which the other accounts read and never write.
A role's folder holds KEY/ (venv/, env.json), KEY.building/ while one is built, KEY.lock, used/KEY (its last use, as
the file's time) and prune.lock.

Who holds what: a builder holds KEY.lock exclusively; a process that uses an environment holds it shared (its last
few, for as long as it lives), and pruning takes it exclusively without waiting, so it never removes one being
built or used.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from shared.environment.files import ProjectEnvError
from shared.export import remove_tree
from shared.workspace import LOOP_ROLES, Role, Workspace

HELD_PER_PROCESS = 4  # environments a process keeps from pruning at once: its last used
LOCK_POLL = 0.1  # seconds between tries for a key another process is building, up to the caller's deadline
ABANDONED = 3600.0  # seconds after which a folder being removed (NAME.removing-*) is taken as abandoned
_held: dict[Path, int] = {}  # lock file -> the descriptor holding it shared, oldest first
_held_lock = threading.Lock()


def cache_base(ws: Workspace) -> Path:
    """The machine's folder of environments, as [env] cache or the defaults say."""
    if ws.config.env.cache:
        return Path(os.path.expanduser(ws.config.env.cache))
    if ws.config.isolation.backend == "users":  # the role accounts' own: neither has a HOME nor shares the operator's
        return Path("/var/cache/banach/env")
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "banach" / "env"
    if os.geteuid() == 0:
        return Path("/var/cache/banach/env")
    return Path.home() / ".cache" / "banach" / "env"


def cache_root(ws: Workspace, role: Role) -> Path:
    """Where this role builds: the machine's folder, or, under the users backend, its account's folder in it."""
    if ws.config.isolation.backend == "users":
        from shared.isolation.users import account_name

        return cache_base(ws) / account_name(ws, role)
    return cache_base(ws)


@dataclass(frozen=True)
class Entry:
    """A complete environment in the cache, as pruning and status see it."""
    folder: Path
    last_used: float
    size: int
    record: dict[str, object]


@dataclass(frozen=True)
class EnvCache:
    ws: Workspace
    role: Role
    root: Path
    others: tuple[Path, ...]  # other accounts' folders (users backend), read-only to this role

    @classmethod
    def of(cls, ws: Workspace, role: Role) -> EnvCache:
        root = cache_root(ws, role)
        others = tuple(cache_root(ws, other) for other in LOOP_ROLES if cache_root(ws, other) != root)
        return cls(ws, role, root, others)

    def find(self, key: str) -> Path | None:
        """The complete environment of this key: this role's, else one another account built (users backend)."""
        for root in (self.root, *self.others):
            folder = root / key
            try:
                if (folder / "env.json").is_file() and (os.access(folder / "venv" / "bin" / "python", os.X_OK)
                                                        or (folder / "node_modules").is_dir() or (folder / "gomod").is_dir()):
                    return folder
            except OSError:
                continue
        return None

    @contextlib.contextmanager
    def building(self, key: str, deadline: float, why: str) -> Iterator[Path | None]:
        """The key's environment, if it is complete (found now, or made by another builder while this one waited);
        else None, with the key's lock held exclusively for the caller to build it. Waits no longer than the deadline
        (why: what the deadline is, for the error)."""
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o755)
        except PermissionError:
            raise ProjectEnvError(f"{self.role}-loop may not make {self.root}, where it builds the project's "
                                  f"environments: under the users backend run 'sudo banach setup-users -w "
                                  f"{self.ws.root}', which makes it, or name a folder it may write in [env] cache") from None
        lock = self.root / f"{key}.lock"
        _release(lock)  # a descriptor of ours holding it shared would keep us waiting on ourselves
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    found = self.find(key)  # built meanwhile: its users hold the lock shared from now on
                    if found is not None:
                        yield found
                        return
                    if time.monotonic() + LOCK_POLL > deadline:
                        raise ProjectEnvError(f"the project's environment {key[:12]} is being built by another process "
                                              f"(lock {lock}), and was not ready within {why}") from None
                    time.sleep(LOCK_POLL)
            yield self.find(key)
        finally:
            os.close(fd)

    def hold(self, folder: Path) -> bool:
        """Record the environment's last use, and hold it shared from pruning while this process lives (its last
        HELD_PER_PROCESS). False when it was removed in between: build it again."""
        lock = folder.with_name(folder.name + ".lock")
        with _held_lock:
            if lock not in _held:
                try:
                    fd = os.open(lock, (os.O_RDWR | os.O_CREAT if folder.parent == self.root else os.O_RDONLY)
                                 | os.O_CLOEXEC, 0o644)
                except OSError:
                    fd = -1
                if fd >= 0:
                    fcntl.flock(fd, fcntl.LOCK_SH)  # waits out a pruner (milliseconds: it renames, then removes)
                    _held[lock] = fd
            else:
                _held[lock] = _held.pop(lock)  # the most recent last
            while len(_held) > HELD_PER_PROCESS:
                os.close(_held.pop(next(iter(_held))))
        if not (folder / "env.json").is_file():
            _release(lock)
            return False
        used = self.root / "used" / folder.name
        with contextlib.suppress(OSError):
            used.parent.mkdir(parents=True, exist_ok=True)
            used.touch()
        return True

    def entries(self) -> list[Entry]:
        """This role's complete environments, the most recently used first."""
        found = []
        for record in self.root.glob("*/env.json"):
            try:
                data = json.loads(record.read_text())
            except (OSError, ValueError):
                continue
            folder = record.parent
            found.append(Entry(folder, self.last_used(folder.name, float(data.get("built_at", 0))),
                               int(data.get("bytes", 0)), data))
        return sorted(found, key=lambda entry: entry.last_used, reverse=True)

    def last_used(self, key: str, built_at: float) -> float:
        times = [built_at]
        for root in (self.root, *self.others):
            with contextlib.suppress(OSError):
                times.append((root / "used" / key).stat().st_mtime)
        return max(times)

    def prune(self) -> list[str]:
        """Remove the environments this role's folder need not keep: never its [env] keep most recently used, nor one
        being built or held; the rest when unused for [env] max_age_days, then the least recently used while the
        folder is over [env] max_cache_bytes. Returns what was removed, as lines. Another process pruning: nothing."""
        config = self.ws.config.env
        removed: list[str] = []
        self.root.mkdir(parents=True, exist_ok=True, mode=0o755)
        fd = os.open(self.root / "prune.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return []
            entries = self.entries()
            total = sum(entry.size for entry in entries)
            for entry in reversed(entries[config.keep:]):  # the least recently used first
                idle_days = (time.time() - entry.last_used) / 86400
                if idle_days <= config.max_age_days and total <= config.max_cache_bytes:
                    continue
                if self._remove(entry.folder):
                    total -= entry.size
                    removed.append(f"{entry.folder.name[:12]} ({entry.size / 2**20:.0f} MiB, unused for {idle_days:.1f} "
                                   "days)")
            for leftover in self.root.glob("*.building"):
                self._remove(leftover)  # a builder that was killed
            for leftover in self.root.glob("*.removing-*"):  # a removal cut short (not one under way)
                with contextlib.suppress(OSError):
                    if time.time() - leftover.lstat().st_ctime > ABANDONED:
                        remove_tree(leftover)
        finally:
            os.close(fd)
        return removed

    def _remove(self, folder: Path) -> bool:
        """Remove folder unless its key's lock is held (being built, or in use): renamed first, so that no reader sees
        half of it as complete."""
        key = folder.name.split(".")[0]
        lock = self.root / f"{key}.lock"
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            gone = folder.with_name(f"{key}.removing-{secrets.token_hex(4)}")
            try:
                folder.rename(gone)
            except OSError:
                return False
            if folder.name == key:
                with contextlib.suppress(OSError):
                    (self.root / "used" / key).unlink()
        finally:
            os.close(fd)
        remove_tree(gone)
        return True


def discard(folder: Path, root: Path) -> None:
    """Remove folder (a build's leftovers) without waiting for it: renamed at once into root (the cache's folder, on the
    same file system) as NAME.removing-*, so that nothing takes it for an environment or a build in progress, then
    removed by a thread of its own (the kernel may take seconds to free what a build just wrote); pruning removes
    what such a thread did not finish."""
    if not folder.exists():
        return
    gone = root / f"{folder.name}.removing-{secrets.token_hex(4)}"
    folder.rename(gone)
    threading.Thread(target=_remove_quietly, args=(gone,), name="banach-env-discard", daemon=True).start()


def _remove_quietly(folder: Path) -> None:
    with contextlib.suppress(OSError):
        remove_tree(folder)


def _release(lock: Path) -> None:
    with _held_lock:
        fd = _held.pop(lock, None)
    if fd is not None:
        os.close(fd)


def folder_size(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
    return total
