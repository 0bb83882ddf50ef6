"""Which item next: the most important open item that is not blocked: priority, then how many other
items wait for it, then age (the plan pass that first found it)."""
from __future__ import annotations

from shared.contracts.fix_plan import FixPlan, Item


def pick(plan: FixPlan, *, done: set[str], blocked: set[str], first_seen: dict[str, int]) -> Item | None:
    open_ids = {item.id for item in plan.items} - done
    candidates = [
        item for item in plan.items
        if item.id in open_ids and item.id not in blocked and not (set(item.depends_on) & open_ids)
    ]
    if not candidates:
        return None
    waiting = {item.id: sum(item.id in other.depends_on for other in plan.items) for item in plan.items}
    return min(candidates, key=lambda item: (item.priority, -waiting[item.id], first_seen.get(item.id, 1 << 30), item.id))
