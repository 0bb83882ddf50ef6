"""build-loop run: iterate while there is work, wait for a new fix_plan when there is none, respect budgets
and usage limits, and stop cleanly (journaled) on SIGTERM."""
from __future__ import annotations

import time
from collections.abc import Callable

from build_loop.governor import Governor, Outcome
from shared.daemon import Stopper
from shared.watch import Watcher

MAX_LIMIT_WAIT = 6 * 3600.0


def _budget_hit(governor: Governor, turns: int, started: float, cost: float) -> str:
    build = governor.ws.config.build
    if build.max_turns and turns >= build.max_turns:
        return f"turn budget: {turns} of {build.max_turns} turns used"
    if build.max_seconds and time.monotonic() - started >= build.max_seconds:
        return f"time budget: {build.max_seconds:g}s of wall-clock used"
    if build.max_cost_usd and cost >= build.max_cost_usd:
        return f"cost budget: ${cost:.2f} of ${build.max_cost_usd:.2f} reported by the agent or the gateway"
    return governor.run_budget_spent()


def serve_build(governor: Governor, *, echo: Callable[[str], None], stopper: Stopper) -> str:
    """Returns why the run ended."""
    ws = governor.ws
    watcher = Watcher([(ws.plan_dir, False)], debounce=0.2, wanted=lambda p: p.name == "fix_plan.json")
    turns, cost, started, limit_waits = 0, 0.0, time.monotonic(), 0
    governor.journal.append("loop.started", {})
    reason = "stopped"
    watcher.start()
    try:
        while not stopper.stopping:
            budget = _budget_hit(governor, turns, started, cost)
            if budget:
                governor.journal.append("run.budget_exhausted", {"budget": budget, "turns": turns, "cost_usd": cost})
                echo(f"build-loop: stopping cleanly: {budget}")
                reason = budget
                break
            outcome: Outcome = governor.iterate()
            echo(outcome.message)
            if outcome.decision == "budget_exhausted":
                governor.journal.append("run.budget_exhausted", {"budget": outcome.message, "turns": turns, "cost_usd": cost})
                reason = outcome.message
                break
            if outcome.decision not in ("idle", "already_green", "interrupted", "paused", "blocked"):
                turns += 1
            cost += outcome.cost_usd or 0.0
            if outcome.decision == "rate_limited":
                limit_waits += 1
                wait = (outcome.resets_at - time.time()) if outcome.resets_at else min(60.0 * 2 ** (limit_waits - 1), 1800.0)
                wait = max(1.0, min(wait, MAX_LIMIT_WAIT))
                governor.journal.append("limit.wait", {"seconds": round(wait, 1), "resets_at": outcome.resets_at})
                echo(f"build-loop: usage limit; waiting {wait:.0f}s before resuming")
                stopper.event.wait(wait)
                continue
            limit_waits = 0
            if outcome.decision in ("idle", "paused"):
                watcher.wait(ws.config.build.idle_poll_seconds, stopper.event)
    finally:
        watcher.stop()
        governor.journal.append("loop.stopped", {"signal": stopper.signal_name, "reason": reason, "turns": turns})
    return reason
