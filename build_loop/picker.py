"""Which item next: the most important open item that is not blocked: priority, then how many other
items wait for it, then age (the plan pass that first found it). Only from a fix_plan that measures the current
canon and a commit in the code's history; done means claimed by a kept commit's trailer or found green here."""
from __future__ import annotations

from typing import Any

from build_loop.history import skipped_green
from canon.scope import may_overlap
from canon.store import CanonStore
from shared.contracts import fix_plan as fix_plan_file
from shared.contracts import trailers
from shared.contracts.blocks import ROUND, current_blocks, explain, has_rounds_left, unblock_hint
from shared.contracts.fix_plan import FixPlan, Item
from shared.git import GitRepo
from shared.journal import Journal
from shared.workspace import Workspace


def pick(plan: FixPlan, *, done: set[str], blocked: set[str], first_seen: dict[str, int]) -> Item | None:
    ready = ranked(plan, done=done, blocked=blocked, first_seen=first_seen)
    return ready[0] if ready else None


def ranked(plan: FixPlan, *, done: set[str], blocked: set[str], first_seen: dict[str, int],
           in_flight: tuple[Item, ...] = ()) -> list[Item]:
    """Every item that may start now, most important first: open, not blocked, no open dependency, and (with parallel
    workers) not in flight and with a write scope that cannot overlap any item's in flight."""
    open_ids = {item.id for item in plan.items} - done
    flying = {item.id for item in in_flight}
    candidates = [
        item for item in plan.items
        if item.id in open_ids and item.id not in blocked and item.id not in flying
        and not (set(item.depends_on) & open_ids)
        and not any(may_overlap(item.scope, other.scope) for other in in_flight)
    ]
    waiting = {item.id: sum(item.id in other.depends_on for other in plan.items) for item in plan.items}
    return sorted(candidates,
                  key=lambda item: (item.priority, -waiting[item.id], first_seen.get(item.id, 1 << 30), item.id))


def current_plan(ws: Workspace, canon_store: CanonStore, code: GitRepo) -> tuple[FixPlan | None, str]:
    """The fix_plan build may act on, or None and what it waits for."""
    plan = fix_plan_file.read(ws.fix_plan_json)
    if plan is None:
        return None, "no fix_plan yet: waiting for plan-loop to measure"
    version = canon_store.version()
    if plan.canon_version != version:
        return None, f"fix_plan measures canon v{plan.canon_version}, canon is v{version}: waiting for plan-loop"
    head = code.head()
    if head is None or not code.is_ancestor(plan.code_commit, head):
        return None, "fix_plan measures a commit that is not in the code's history: waiting for plan-loop"
    return plan, ""


def done_items(journal: Journal, code: GitRepo, plan: FixPlan) -> set[str]:
    """Claimed by a kept commit's trailer since the plan's commit, or found green here against this fix_plan."""
    claimed = {value for _, value in code.commits_with_trailer(plan.code_commit, "HEAD", trailers.ITEM)}
    return claimed | skipped_green(journal, plan.pass_seq)


def ready_items(ws: Workspace, journal: Journal, code: GitRepo, plan: FixPlan, in_flight: tuple[Item, ...]) -> list[Item]:
    """What parallel workers may start now, most important first (see ranked); when nothing is, and nothing is in
    flight, a blocked item's next round."""
    blocks = current_blocks(journal, plan.canon_version)
    done, first_seen = done_items(journal, code, plan), _first_seen(ws)
    ready = ranked(plan, done=done, blocked=set(blocks), first_seen=first_seen, in_flight=in_flight)
    if ready or in_flight:
        return ready
    again = next_round(ws, journal, plan, done, blocks, first_seen)
    return [again] if again is not None else []


def next_item(ws: Workspace, journal: Journal, code: GitRepo, plan: FixPlan) -> tuple[Item | None, str]:
    """The item to work on, or None and why there is none (naming each blocked item and how to unblock it)."""
    blocks = current_blocks(journal, plan.canon_version)
    done, first_seen = done_items(journal, code, plan), _first_seen(ws)
    item = pick(plan, done=done, blocked=set(blocks), first_seen=first_seen)
    if item is None:
        item = next_round(ws, journal, plan, done, blocks, first_seen)
    if item is not None:
        return item, ""
    build = ws.config.build
    return None, why_nothing(plan, done, blocks, build.max_attempts * build.rounds)


def next_round(ws: Workspace, journal: Journal, plan: FixPlan, done: set[str], blocks: dict[str, Any],
               first_seen: dict[str, int]) -> Item | None:
    """Nothing else is ready: the most important blocked item with rounds left starts its next round (journaled: a
    fresh attempt budget, the ladder's top rung), or None. Its failure history stays: the prompt shows it."""
    again = {item_id for item_id, block in blocks.items() if has_rounds_left(block)}
    if not again:
        return None
    candidates = [item for item in ranked(plan, done=done, blocked=set(blocks) - again, first_seen=first_seen)
                  if item.id in again]
    if not candidates:
        return None
    item, block = candidates[0], blocks[candidates[0].id]
    top = len(ws.config.build.rungs) - 1
    journal.append(ROUND, {"item": item.id, "canon_version": plan.canon_version, "round": int(block.get("round") or 1) + 1,
                           "rounds": int(block.get("rounds") or 1), "rung": top,
                           "by": "build: nothing else was ready"})
    return item


def why_nothing(plan: FixPlan, done: set[str], blocks: dict[str, Any], turns_per_unblock: int) -> str:
    if blocks and len(plan.items) > len(done):
        lines = [explain(item_id, block) for item_id, block in sorted(blocks.items())]
        return (f"nothing to do: {len(blocks)} item(s) blocked, the rest done or waiting on them:\n  "
                + "\n  ".join(lines) + f"\n{unblock_hint(turns_per_unblock)}")
    return "nothing open that build has not already done: waiting for plan-loop to re-measure"


def _first_seen(ws: Workspace) -> dict[str, int]:
    plan_journal = Journal.reader(ws.journal_path("plan"))
    seen: dict[str, int] = {}
    if plan_journal is not None:
        with plan_journal:
            for row in plan_journal.rows("pass"):
                for item_id in row.data.get("items", []):
                    seen.setdefault(item_id, row.seq)
    return seen
