"""Which fix_plan items build has blocked, and why: build writes these rows, status and people read them.

An item is blocked (`item.blocked`) when it beat its attempt budget under one canon version; it stays
blocked for that version until a person unblocks it (`item.unblocked`, from `build-loop unblock`), which
also gives it a fresh attempt budget. A new canon version starts every item afresh.
"""
from __future__ import annotations

from typing import Any

from shared.journal import Journal

BLOCKED = "item.blocked"
UNBLOCKED = "item.unblocked"


def current_blocks(journal: Journal, canon_version: int) -> dict[str, dict[str, Any]]:
    """item id -> the evidence of its block, for the items blocked now under this canon version."""
    blocks: dict[str, dict[str, Any]] = {}
    for row in journal.rows(prefix=True, kind="item."):
        item = str(row.data.get("item", ""))
        if row.kind == BLOCKED and row.data.get("canon_version") == canon_version:
            blocks[item] = row.data
        elif row.kind == UNBLOCKED:
            blocks.pop(item, None)
    return blocks


def explain(item: str, block: dict[str, Any]) -> str:
    """One line a person can act on."""
    evidence = block.get("evidence") or {}
    reason = evidence.get("reason") or "no reason recorded"
    where = f"; see build-loop report {evidence['iteration']}" if evidence.get("iteration") else ""
    return f"{item}: blocked after {block.get('attempts', '?')} attempts: {reason}{where}"


UNBLOCK_HINT = ("unblock with 'build-loop unblock ITEM' (a fresh attempt budget) once the cause is fixed, "
                "or change the requirement in canon")
