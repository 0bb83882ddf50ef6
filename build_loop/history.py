"""What build knows about an item, derived from its own journal: attempts, the ladder rung, negative
knowledge of rolled-back attempts, and whether it is blocked. Nothing here is stored twice."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shared.contracts.blocks import BLOCKED, ROUND, UNBLOCKED, current_blocks, requirement_of
from shared.errors import BanachError
from shared.journal import Journal
from shared.workspace import Workspace

FAILED = ("rollback", "stall", "agent_failed")  # attempts on the item that did not help


@dataclass
class ItemHistory:
    attempts: int = 0  # iterations that were rolled back or stalled, in this round
    turns: int = 0  # every turn on the item since a person last unblocked it, across rounds: what a person pays for
    round_changed: bool = False  # some turn of this round left a change (judged, even if rolled back)
    streak: int = 0  # failed iterations since the last climb or keep
    rung: int = 0
    kept: int = 0
    blocked: dict[str, Any] | None = None
    round: int = 1  # which round of build.rounds the item is in (build_loop/picker.py starts the next)
    negative: list[dict[str, Any]] = field(default_factory=list)
    last_feedback: dict[str, str] = field(default_factory=dict)


def item_history(journal: Journal, item_id: str, canon_version: int) -> ItemHistory:
    history = ItemHistory()
    for row in journal.rows():
        data = row.data
        if data.get("item") != item_id:
            continue
        if row.kind == "iteration.ended":
            decision = data.get("decision")
            if decision in FAILED or decision == "keep":
                history.turns += 1
            if decision in ("rollback", "keep"):
                history.round_changed = True
            if decision in FAILED:
                history.attempts += 1
                history.streak += 1
                history.negative.append({
                    "iteration": data.get("n"), "reason": data.get("reason", decision),
                    "changed": data.get("changed", []), "excerpt": data.get("excerpt", ""),
                })
            elif decision == "keep" and data.get("held_back"):  # kept unjudged: counts as an attempt until plan closes it
                history.kept += 1
                history.attempts += 1
                history.streak += 1
            elif decision == "keep":
                history.kept += 1
                history.streak = 0
            if data.get("feedback"):
                history.last_feedback = data["feedback"]
        elif row.kind == "ladder.climb":
            history.rung = data["to"]
            history.streak = 0
        elif row.kind == BLOCKED and data.get("canon_version") == canon_version:
            history.blocked = data
        elif row.kind == UNBLOCKED:  # a person gave it a fresh budget, and its rounds again
            history.blocked, history.attempts, history.streak, history.round = None, 0, 0, 1
            history.turns, history.round_changed = 0, False
        elif row.kind == ROUND and data.get("canon_version") == canon_version:  # another round: fresh budget, top rung
            history.blocked, history.attempts, history.streak, history.round_changed = None, 0, 0, False
            history.round, history.rung = int(data["round"]), int(data["rung"])
    return history


def blocked_items(journal: Journal, canon_version: int) -> set[str]:
    return set(current_blocks(journal, canon_version))


def unblock(journal: Journal, items: list[str], canon_version: int) -> list[str]:
    """Record that a person unblocked these items (all blocked ones when items is empty); returns them. A name may
    be an item's id or its requirement's id, when exactly one blocked item is of that requirement."""
    blocked = current_blocks(journal, canon_version)
    chosen = [resolve(name, blocked, canon_version) for name in items] if items else sorted(blocked)
    for item in chosen:
        journal.append(UNBLOCKED, {"item": item, "canon_version": canon_version, "by": "a person (build-loop unblock)"})
    return chosen


def resolve(name: str, blocked: dict[str, Any], canon_version: int) -> str:
    """The blocked item a person named, by its id or by its requirement's id (what status shows first)."""
    if name in blocked:
        return name
    of_requirement = sorted(item for item in blocked if requirement_of(item) == name)
    if len(of_requirement) == 1:
        return of_requirement[0]
    shown = ", ".join(f"{requirement_of(item)} (item {item})" for item in sorted(blocked)) or "none"
    if of_requirement:
        raise BanachError(f"{name} names {len(of_requirement)} blocked items ({', '.join(of_requirement)}); name the "
                          f"one to unblock by its item id, or leave out the names to unblock them all")
    raise BanachError(f"{name} is not blocked under canon v{canon_version}; blocked now: {shown}")


def skipped_green(journal: Journal, plan_pass: int) -> set[str]:
    """Items found already green by build's sensors against this fix_plan: believed done until plan re-measures."""
    return {row.data["item"] for row in journal.rows("iteration.ended")
            if row.data.get("decision") == "already_green" and row.data.get("plan_pass") == plan_pass}


def next_iteration(journal: Journal) -> int:
    """One more than the highest iteration started: lanes start theirs out of order, so not merely the last row's."""
    started = journal.rows("iteration.started")
    return 1 + max((int(row.data["n"]) for row in started), default=0)


def unblock_items(ws: Workspace, items: list[str]) -> list[str]:
    """`build-loop unblock`: the workspace's build journal, canon's current version."""
    from canon.store import CanonStore

    with Journal.for_role(ws, "build") as journal:
        return unblock(journal, items, CanonStore(ws.canon).version())
