"""The ref guards: what the agent may not do to the code's git state, however it got there (a commit, a reset, a
checkout, a stash, an index flag that hides a change from git status)."""
from __future__ import annotations

from typing import Any

from shared.git import RefState


def refs_json(refs: RefState) -> dict[str, Any]:
    return {"head_symbolic": refs.head_symbolic, "head": refs.head, "refs": [list(r) for r in refs.refs],
            "hidden": list(refs.hidden)}


def refs_from_json(data: dict[str, Any], head: str) -> RefState:
    return RefState(data["head_symbolic"], head, tuple(tuple(r) for r in data["refs"]), ())  # type: ignore[misc]


def violations(before: RefState, after: RefState) -> list[str]:
    found = []
    if after.head != before.head:
        found.append(f"HEAD moved {before.head[:12]} -> {after.head[:12]} (commit or reset)")
    if after.head_symbolic != before.head_symbolic:
        found.append(f"HEAD switched {before.head_symbolic or 'detached'} -> {after.head_symbolic or 'detached'} (checkout)")
    old, new = dict(before.refs), dict(after.refs)
    for ref in sorted(set(old) | set(new)):
        if old.get(ref) != new.get(ref):
            what = "stash" if ref == "refs/stash" else ref
            found.append(f"{what} {'created' if ref not in old else 'deleted' if ref not in new else 'moved'}")
    for path in sorted(set(after.hidden) - set(before.hidden)):
        found.append(f"index flag hides {path} (skip-worktree or assume-unchanged)")
    return found
