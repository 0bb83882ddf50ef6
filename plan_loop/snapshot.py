"""Clean, read-only snapshots of (V, C) in plan's scratch space. Made from git objects alone:
plan never touches the build's work tree, and never writes into either repository."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from shared.git import GitRepo

KEEP = 4  # snapshots kept; older ones are removed at the start of a pass


@dataclass(frozen=True)
class Snapshot:
    code: Path
    canon: Path
    scratch: Path  # where checks may write (their TMPDIR)


def _export(repo: GitRepo, rev: str, destination: Path) -> Path:
    if destination.is_dir() and (destination.parent / f"{destination.name}.done").exists():
        return destination
    partial = destination.with_name(destination.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    repo.export(rev, partial)
    shutil.rmtree(destination, ignore_errors=True)
    partial.rename(destination)
    (destination.parent / f"{destination.name}.done").touch()
    return destination


def take(root: Path, code: GitRepo, code_commit: str, canon: GitRepo, canon_commit: str) -> Snapshot:
    root.mkdir(parents=True, exist_ok=True)
    _prune(root)
    base = root / f"{code_commit[:12]}-{canon_commit[:12]}"
    code_dir = _export(code, code_commit, base / "code")
    canon_dir = _export(canon, canon_commit, base / "canon")
    scratch = base / "tmp"
    scratch.mkdir(exist_ok=True)
    base.touch()  # marks it as recently used
    return Snapshot(code_dir, canon_dir, scratch)


def _prune(root: Path) -> None:
    snapshots = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in snapshots[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
