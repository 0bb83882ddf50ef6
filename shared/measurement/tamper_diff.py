"""What a change added to the tamper scan's hits: the scan judges the turn, not the project.

A library that has always read stack frames would otherwise have every turn that touches that file rolled back for
lines the turn did not write. So build compares the files a turn changed with the same files at its checkpoint,
and plan compares the files changed since the workspace's start with the same files at the start: a hit counts
when the file has more of it than it had before. Hits are compared per file as a multiset of (kind, the construct
as written), never by line number, so code that moved is not new, and code whose construct changed is. Where a
file has more of a construct than before, the ones reported are those on lines the change wrote.

    added = scan_change(repo, {"pkg/mod.py": blob}, contents(repo, checkpoint, ["pkg/mod.py"]))

What a change can still do is use what the project already had: call its old frame-reading helper, or move an
old construct to where it serves the change. SECURITY.md says so; the scan stays a tripwire.
"""
from __future__ import annotations

import difflib
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from shared.measurement.tamper import Hit, scan, scanned

if TYPE_CHECKING:
    from shared.git import GitRepo


def contents(repo: GitRepo, rev: str, paths: Iterable[str]) -> dict[str, bytes]:
    """The files among `paths` that the scan reads, as they are at rev (a path not there is left out)."""
    wanted = {path for path in paths if scanned(path)}
    if not wanted:
        return {}
    blobs = {path: entry.blob for path, entry in repo.tree_entries(rev).items() if path in wanted}
    found = repo.blobs(sorted(set(blobs.values())))
    return {path: found[blob] for path, blob in blobs.items() if blob in found}


def added(after: Mapping[str, bytes], before: Mapping[str, bytes]) -> list[Hit]:
    """The hits of the files in `after` (path -> content) that the same files did not have in `before` (path ->
    content as they were; a path missing there is a new file, all of whose hits are new)."""
    had = Counter(hit.key for hit in scan({path: before[path] for path in after if path in before}))
    groups: dict[tuple[str, str, str, str], list[Hit]] = defaultdict(list)
    for hit in scan(after):
        groups[hit.key].append(hit)
    new: list[Hit] = []
    lines: dict[str, set[int]] = {}
    for key, hits in groups.items():
        extra = len(hits) - had[key]
        if extra <= 0:
            continue
        path = key[0]
        if path not in lines:
            lines[path] = _written_lines(before.get(path), after[path])
        written = lines[path]
        new += sorted(hits, key=lambda hit: (hit.line not in written, -hit.line))[:extra]
    return sorted(new, key=lambda hit: (hit.path, hit.line, hit.kind, hit.what, hit.written))


def scan_change(repo: GitRepo, blobs: Mapping[str, str], before: Mapping[str, bytes] | None) -> list[Hit]:
    """The hits in these files of repo (path -> blob id) that they did not have in `before` (see added); None: every
    hit, for want of anything to compare with."""
    chosen = {path: blob for path, blob in blobs.items() if scanned(path)}
    found = repo.blobs(sorted(set(chosen.values())))
    after = {path: found[blob] for path, blob in chosen.items() if blob in found}
    return scan(after) if before is None else added(after, before)


def _written_lines(old: bytes | None, new: bytes) -> set[int]:
    """The lines of `new` (numbered from 1) that are not in `old`, as a line diff sees them."""
    new_lines = new.decode("utf-8", errors="replace").splitlines()
    if old is None:
        return set(range(1, len(new_lines) + 1))
    matcher = difflib.SequenceMatcher(None, old.decode("utf-8", errors="replace").splitlines(), new_lines,
                                      autojunk=False)
    return {line + 1 for tag, _, _, start, end in matcher.get_opcodes() if tag in ("replace", "insert")
            for line in range(start, end)}
