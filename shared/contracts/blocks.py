"""Which fix_plan items build has blocked, and why: build writes these rows, status and people read them.

An item is blocked (`item.blocked`) when it beat its attempt budget under one canon version. While it has rounds left
(`build.rounds`), build gives it another round when nothing else is ready (`item.round`: a fresh attempt budget, the
ladder's top rung, its failure history in the prompt); after its last round it stays blocked for that version until a
person unblocks it (`item.unblocked`, from `build-loop unblock`), which gives it a fresh budget and its rounds again.
A new canon version starts every item afresh.
"""
from __future__ import annotations

from typing import Any

from shared.journal import Journal

BLOCKED = "item.blocked"
UNBLOCKED = "item.unblocked"
ROUND = "item.round"


def current_blocks(journal: Journal, canon_version: int) -> dict[str, dict[str, Any]]:
    """item id -> the evidence of its block, for the items blocked now under this canon version."""
    blocks: dict[str, dict[str, Any]] = {}
    for row in journal.rows(prefix=True, kind="item."):
        item = str(row.data.get("item", ""))
        if row.kind == BLOCKED and row.data.get("canon_version") == canon_version:
            blocks[item] = row.data
        elif row.kind in (UNBLOCKED, ROUND):
            blocks.pop(item, None)
    return blocks


def has_rounds_left(block: dict[str, Any]) -> bool:
    """Blocked in a round before its last: build gives it another when nothing else is ready."""
    return int(block.get("round") or 1) < int(block.get("rounds") or 1)


def explain(item: str, block: dict[str, Any]) -> str:
    """One line a person can act on."""
    evidence = block.get("evidence") or {}
    reason = evidence.get("reason") or "no reason recorded"
    where = f"; see build-loop report {evidence['iteration']}" if evidence.get("iteration") else ""
    rounds = int(block.get("rounds") or 1)
    which = (f" (round {block.get('round', 1)} of {rounds}: another round when nothing else is ready)"
             if has_rounds_left(block) else f" (after {rounds} rounds: waiting for a person)" if rounds > 1 else "")
    return f"{item}: blocked after {block.get('attempts', '?')} attempts{which}: {reason}{where}"


UNBLOCK_HINT = ("unblock with 'build-loop unblock ITEM' (a fresh attempt budget) once the cause is fixed, "
                "or change the requirement in canon")
