"""The write-scope fence: after a turn, every change outside the item's scope is reverted and recorded.

Never in scope, whatever an item grants: canon (and its conformance tests), banach.toml, the state
dir, fix_plan and .git, wherever they sit relative to the code repository.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from canon.scope import matches
from shared.git import Change, GitRepo
from shared.workspace import Workspace


@dataclass(frozen=True)
class FenceReport:
    kept: tuple[str, ...]
    reverted: tuple[str, ...]


def protected_patterns(ws: Workspace) -> tuple[str, ...]:
    """Workspace stores that fall inside the code repository (when a person nests them) are never in scope."""
    patterns = [".git/**", ".git"]
    for store in (ws.canon, ws.state, ws.plan_dir, ws.inbox, ws.config_file):
        try:
            rel = store.resolve().relative_to(ws.code.resolve())
        except ValueError:
            continue
        patterns += [str(rel), f"{rel}/**"]
    return tuple(patterns)


def fence(repo: GitRepo, checkpoint: str, scope: tuple[str, ...], protected: tuple[str, ...]) -> FenceReport:
    kept, reverted = [], []
    changes: list[Change] = repo.changes()
    for change in changes:
        path = change.path.rstrip("/")
        if matches(path, protected) or not matches(path, scope):
            repo.revert_path(checkpoint, path)
            reverted.append(path)
        else:
            kept.append(path)
    _remove_empty_dirs(repo.path, reverted)
    return FenceReport(tuple(kept), tuple(reverted))


def _remove_empty_dirs(root: Path, paths: list[str]) -> None:
    for rel in paths:
        parent = (root / rel).parent
        while parent != root and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
