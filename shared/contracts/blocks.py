"""Which fix_plan items build has blocked, and why: build writes these rows, status and people read them.

An item is blocked (`item.blocked`) when it beat its attempt budget under one canon version. While it has rounds left
(`build.rounds`), build gives it another round when nothing else is ready (`item.round`: a fresh attempt budget, the
ladder's top rung, its failure history in the prompt); after its last round, or after a round in which no attempt
changed anything (another would be a guess, billed per turn), it stays blocked for that version until a person
unblocks it (`item.unblocked`, from `build-loop unblock`), which gives it a fresh budget and its rounds again.
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


def requirement_of(item: str) -> str:
    """The requirement an item measures: its id up to the hash plan adds (TK-1.6211d9 -> TK-1)."""
    head, dot, tail = item.rpartition(".")
    return head if dot and head else item


def has_rounds_left(block: dict[str, Any]) -> bool:
    """Blocked in a round before its last, with some attempt that changed something: build gives it another round
    when nothing else is ready."""
    return int(block.get("round") or 1) < int(block.get("rounds") or 1) and not block.get("changed_nothing")


def turns_of(block: dict[str, Any]) -> int:
    """Every turn spent on the item since a person last unblocked it (a record from before this was counted: its
    last round's attempts)."""
    return int(block.get("turns") or block.get("attempts") or 0)


def cause_of(block: dict[str, Any]) -> str:
    """Why the item's checks fail, as the last turn's sensors said it; else what the last turn did."""
    evidence = block.get("evidence") or {}
    return str(evidence.get("cause") or evidence.get("reason") or "no reason recorded")


def many(count: int, word: str) -> str:
    """'1 turn', '12 turns'."""
    return f"{count} {word}{'s' * (count != 1)}"


def counts(block: dict[str, Any]) -> str:
    """'12 turns in 3 rounds': what was spent, honestly."""
    return f"{many(turns_of(block), 'turn')} in {many(int(block.get('round') or 1), 'round')}"


def explain(item: str, block: dict[str, Any]) -> str:
    """One line a person can act on: the requirement, what was spent, why its checks fail, what the last turn did."""
    evidence = block.get("evidence") or {}
    rounds, this = int(block.get("rounds") or 1), int(block.get("round") or 1)
    if has_rounds_left(block):
        which = f" (round {this} of {rounds}: another round when nothing else is ready)"
    elif block.get("changed_nothing") and this < rounds:
        which = " (no attempt of that round changed anything, so no further round without a person)"
    else:
        which = " (waiting for a person)"
    reason = evidence.get("reason") or ""
    last = f"; the last turn: {reason}" if reason and evidence.get("cause") and reason != evidence.get("cause") else ""
    where = f" (build-loop report {evidence['iteration']})" if evidence.get("iteration") else ""
    return f"{requirement_of(item)} (item {item}): blocked after {counts(block)}{which}: {cause_of(block)}{last}{where}"


def unblock_hint(turns_per_unblock: int) -> str:
    """What a person does about a blocked item, and what it may cost."""
    return (f"once the cause is fixed (in the code: banach refresh; or the requirement: spec-loop edit), run "
            f"'build-loop unblock REQ' (REQ: the requirement's id); it may spend up to {many(turns_per_unblock, 'more turn')}")

