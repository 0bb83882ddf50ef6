"""The write-scope fence: after a turn, the real work tree is compared with the checkpoint, every change
outside the item's scope is reverted, and what is kept is stored as blobs that the commit is made from.

It looks at the file system itself, not only at what git reports: git does not list special files, does
not descend into a folder holding a `.git`, and hides ignored files unless asked. Removed whatever the
item's scope says (recorded as hostile): FIFOs, sockets and devices; any `.git`; links whose target leaves
the tree; names git cannot record faithfully; and changed files over the size limit. Files git ignores
are removed too (a planted .pyc is imported in place of its source). Never in scope:
canon (and its conformance tests), banach.toml, the state dir and fix_plan, wherever they sit.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from canon.scope import matches
from shared.git import Entry, GitRepo
from shared.workspace import Workspace


@dataclass(frozen=True)
class FenceLimits:
    max_file_bytes: int
    max_changed_paths: int


@dataclass(frozen=True)
class FenceReport:
    kept: tuple[str, ...]
    reverted: tuple[str, ...]
    hostile: tuple[str, ...] = ()  # removed whatever the scope: "path: why"
    capped: str = ""  # why the whole turn must be rolled back, or ""
    ignored: tuple[str, ...] = ()  # files git ignores (caches, build output): removed, never kept, not held against it

    def merge(self, later: FenceReport) -> FenceReport:
        return FenceReport(later.kept, tuple(sorted(set(self.reverted) | set(later.reverted))),
                           tuple(sorted(set(self.hostile) | set(later.hostile))), self.capped or later.capped,
                           tuple(sorted(set(self.ignored) | set(later.ignored))))


def protected_patterns(ws: Workspace) -> tuple[str, ...]:
    """Workspace stores that fall inside the code repository (when a person nests them) are never in scope."""
    patterns = [".git/**", ".git", "**/.git", "**/.git/**"]
    for store in (ws.canon, ws.state, ws.plan_dir, ws.inbox, ws.config_file):
        try:
            rel = store.resolve().relative_to(ws.code.resolve())
        except ValueError:
            continue
        patterns += [str(rel), f"{rel}/**"]
    return tuple(patterns)


def _why_hostile(root: Path, path: Path, info: os.stat_result, name: str) -> str:
    if name == ".git":
        return "a .git inside the work tree (a nested repository or a git file)"
    if any(ch in name for ch in "\n\r\t") or "\\" in name:
        return "a name with control characters or backslashes"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "a name that is not UTF-8"
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(path)
        textual = os.path.normpath(os.path.join(path.parent, target))
        real, top = os.path.realpath(path), os.path.realpath(root)
        if os.path.isabs(target) or not _within(textual, str(root)) or not _within(real, top):
            return f"a link that leaves the work tree (-> {target})"
        return ""
    if stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode):
        return ""
    return "a special file (FIFO, socket or device)"


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root + os.sep)


_PLAIN_NAME = re.compile(r"[^\n\r\t\\]+")


def remove_hostile(root: Path) -> list[str]:
    """Walk the real tree (links not followed) and remove what must never be kept; returns 'path: why'.
    Plain files and folders with plain names, the bulk of a tree, cost no system call beyond the listing."""
    found: list[str] = []
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            plain = name != ".git" and _PLAIN_NAME.fullmatch(name) is not None and "\udc80" > max(name)
            if plain and entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
                continue
            if plain and entry.is_file(follow_symlinks=False):
                continue
            path = Path(entry.path)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            why = _why_hostile(root, path, info, os.fsdecode(name))
            if why:
                found.append(f"{path.relative_to(root)}: {why}")
                _remove(path, info)
            elif stat.S_ISDIR(info.st_mode):
                stack.append(entry.path)
    return sorted(found)


def _remove(path: Path, info: os.stat_result) -> None:
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def fence(repo: GitRepo, checkpoint: str, scope: tuple[str, ...], protected: tuple[str, ...],
          limits: FenceLimits) -> FenceReport:
    hostile = remove_hostile(repo.path)
    kept, reverted = [], []
    changes = repo.changes()
    if len(changes) > limits.max_changed_paths:
        return FenceReport((), (), tuple(hostile), f"the turn changed {len(changes)} paths, over the limit of "
                                                   f"{limits.max_changed_paths} (build.max_changed_paths)")
    ignored = []
    for change in changes:
        path = change.path.rstrip("/")
        if change.status == "!!":
            _remove(repo.path / path, os.lstat(repo.path / path))
            ignored.append(path)
            continue
        if matches(path, protected) or not matches(path, scope):
            repo.revert_path(checkpoint, path)
            reverted.append(path)
            continue
        full = repo.path / path
        if full.is_file() and not full.is_symlink() and full.stat().st_size > limits.max_file_bytes:
            full.unlink()
            repo.revert_path(checkpoint, path)
            hostile.append(f"{path}: over the file size limit of {limits.max_file_bytes} bytes (build.max_file_bytes)")
            continue
        kept.append(path)
    _remove_empty_dirs(repo.path, reverted + ignored)
    return FenceReport(tuple(kept), tuple(reverted), tuple(hostile), "", tuple(ignored))


def snapshot(repo: GitRepo, kept: tuple[str, ...]) -> dict[str, Entry | None]:
    """The kept paths as blobs (None: deleted): exactly what the commit will contain, whatever is written later."""
    present = [p for p in kept if (repo.path / p).is_symlink() or (repo.path / p).is_file()]
    entries: dict[str, Entry | None] = dict(repo.hash_files(present))
    for path in kept:
        entries.setdefault(path, None)
    return entries


def _remove_empty_dirs(root: Path, paths: list[str]) -> None:
    for rel in paths:
        parent = (root / rel).parent
        while parent != root and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
