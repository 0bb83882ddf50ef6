"""Fresh, read-only copies of (V, C) for one plan pass, in plan's scratch space.

Every pass exports into a new folder: a tree a check could have written (a planted conftest.py, a patched
test) is never measured again. The code comes from plan's own object store (shared.checks.store), canon from
canon's repository, both through shared.export (objects only: no archive, checkout or attributes). The
checks' scratch space (their TMPDIR and HOME) is a sibling of the trees, not inside them. After the pass the
scratch is removed and only the newest KEEP pass folders stay, read-only, for a person to look at.

    state/plan/scratch/pass-<time>-<code>-<canon>/
        code/    read-only export of C
        canon/   read-only export of V, without its held-back tests
        held_back/  V's held-back tests (held_back/ of canon's tree), when it has any: only their own runs read it
        tmp/     the checks' scratch (removed after the pass)
"""
from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from canon.store import HELD_BACK_DIR, SEALED_DIR
from canon.visible import strip_documents
from shared.checks.store import PlanStore
from shared.errors import ExportError
from shared.export import DEFAULT_MAX_BYTES, DEFAULT_MAX_FILES, ExportReport, export_commit, remove_tree
from shared.git import GitRepo

KEEP = 2  # finished pass folders kept (read-only) for debugging; older ones are removed
PREFIX = "pass-"


@dataclass(frozen=True)
class Limits:
    max_bytes: int = DEFAULT_MAX_BYTES
    max_files: int = DEFAULT_MAX_FILES


@dataclass(frozen=True)
class Snapshot:
    code: Path
    canon: Path
    scratch: Path  # where checks may write (their TMPDIR); never inside code or canon
    folder: Path | None = None  # the pass's own folder, holding all three
    code_report: ExportReport | None = None  # what each export wrote, and what of the tree it did not
    canon_report: ExportReport | None = None
    held_back: Path | None = None  # canon's held-back tests (their own root, holding tests/...), or None


def take(root: Path, store: PlanStore, code: GitRepo, code_commit: str, canon: GitRepo, canon_commit: str,
         limits: Limits = Limits()) -> Snapshot:
    """Copy C into plan's store, export C and V into a new folder under root. Raises ExportError (and leaves
    no half-made folder) when either cannot be copied."""
    root.mkdir(parents=True, exist_ok=True)
    prune(root, KEEP - 1)
    folder = root / f"{PREFIX}{time.time_ns():020d}-{code_commit[:12]}-{canon_commit[:12]}"
    try:
        folder.mkdir()
        stored = store.fetch(code, code_commit)
        code_report = export_commit(stored, code_commit, folder / "code", max_bytes=limits.max_bytes,
                                    max_files=limits.max_files)
        canon_report = export_commit(canon, canon_commit, folder / "canon", max_bytes=limits.max_bytes,
                                     max_files=limits.max_files, leave_out=(HELD_BACK_DIR, SEALED_DIR))
        strip_documents(folder / "canon")  # a visible check's copy of canon names no held-back test
        held_back = None
        held_tree = canon.tree_id(canon_commit, HELD_BACK_DIR)
        if held_tree:
            held_back = folder / HELD_BACK_DIR
            export_commit(canon, held_tree, held_back, max_bytes=limits.max_bytes, max_files=limits.max_files)
        scratch = folder / "tmp"
        scratch.mkdir()
        os.chmod(folder, 0o555)  # the trees cannot be swapped for others by a rename in their folder
    except OSError as exc:
        remove_tree(folder)
        raise ExportError(f"cannot prepare plan's snapshot folder {folder}: {exc}") from None
    except BaseException:
        remove_tree(folder)
        raise
    return Snapshot(folder / "code", folder / "canon", scratch, folder, code_report, canon_report, held_back)


def release(snapshot: Snapshot) -> None:
    """End of the pass: the scratch goes, the read-only trees stay until KEEP newer passes exist. A folder a
    check mangled (without Landlock it may) is left for the next prune, not turned into a failed pass."""
    if snapshot.folder is None:
        return
    with contextlib.suppress(OSError):
        os.chmod(snapshot.folder, 0o755)
        remove_tree(snapshot.scratch)
        os.chmod(snapshot.folder, 0o555)
    prune(snapshot.folder.parent, KEEP)


def prune(root: Path, keep: int) -> None:
    """Remove all but the newest `keep` pass folders, and anything else (a previous layout's leftovers)."""
    if not root.is_dir():
        return
    passes = sorted((p for p in root.iterdir() if p.name.startswith(PREFIX) and p.is_dir() and not p.is_symlink()),
                    key=lambda p: p.name, reverse=True)
    kept = set(passes[:keep])
    for entry in root.iterdir():
        if entry not in kept:
            with contextlib.suppress(OSError):  # tried again at the next pass
                remove_tree(entry)
