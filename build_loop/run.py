"""build-loop run: iterate while there is work, wait for a new fix_plan when there is none, respect budgets
and usage limits, and stop cleanly (journaled) on SIGTERM. While it waits it says what for once, not at every poll."""
from __future__ import annotations

import time
from collections.abc import Callable

from build_loop.governor import Governor, Outcome
from canon.store import CanonStore
from shared.config import BuildConfig
from shared.daemon import Stopper
from shared.journal import Journal
from shared.watch import Watcher
from shared.workspace import Workspace

MAX_LIMIT_WAIT = 6 * 3600.0


def limit_wait(resets_at: float | None, waits: int) -> float:
    """Seconds to wait out a usage limit: until the provider's reset when it gave one, else doubling from a minute
    (waits: how many limits in a row), between 1 s and MAX_LIMIT_WAIT."""
    wait = (resets_at - time.time()) if resets_at else min(60.0 * 2 ** (waits - 1), 1800.0)
    return max(1.0, min(wait, MAX_LIMIT_WAIT))


def budget_hit(build: BuildConfig, turns: int, started: float, cost: float, gateway_spent: str) -> str:
    """Which of the run's budgets is spent ("" when none): turns, wall-clock, cost, and the gateway's run budget."""
    if build.max_turns and turns >= build.max_turns:
        return f"turn budget: {turns} of {build.max_turns} turns used"
    if build.max_seconds and time.monotonic() - started >= build.max_seconds:
        return f"time budget: {build.max_seconds:g}s of wall-clock used"
    if build.max_cost_usd and cost >= build.max_cost_usd:
        return f"cost budget: ${cost:.2f} of ${build.max_cost_usd:.2f} reported by the agent or the gateway"
    return gateway_spent


def before_first_plan(ws: Workspace) -> str:
    """What build waits for before plan has written any fix_plan: plan's pass, said so a person knows why."""
    version = CanonStore(ws.canon).version()
    if version == 0:
        return ("build-loop: no fix_plan yet: canon has no requirements, so there is nothing to measure; add some with "
                "'spec-loop edit' or 'spec-loop add', and plan-loop measures them")
    journal = Journal.reader(ws.journal_path("plan"))
    running = first = False
    if journal is not None:
        with journal:
            started, ended = journal.last("pass.started"), journal.last("pass.ended")
            running = started is not None and (ended is None or ended.seq < started.seq)
            first = journal.count("pass") == 0
    which = "plan-loop's first pass" if first or journal is None else "plan-loop's pass"
    what = (f"every check and conformance test of canon v{version} against a fresh, read-only copy of the code, "
            "asks the plan agent if one is set, and writes fix_plan; build starts on the most important open item then")
    if running:
        return f"build-loop: {which} is running: it runs {what}"
    return (f"build-loop: no fix_plan yet: waiting for {which}, which runs {what}. 'banach up' starts plan-loop; "
            "'plan-loop once' runs one pass without it")


def _waiting(governor: Governor, outcome: Outcome) -> str:
    if outcome.decision == "idle" and not governor.ws.fix_plan_json.exists():
        return before_first_plan(governor.ws)
    return outcome.message


def serve_build(governor: Governor, *, echo: Callable[[str], None], stopper: Stopper) -> str:
    """Returns why the run ended."""
    ws = governor.ws
    watcher = Watcher([(ws.plan_dir, False)], debounce=0.2, wanted=lambda p: p.name == "fix_plan.json")
    turns, cost, started, limit_waits = 0, 0.0, time.monotonic(), 0
    governor.journal.append("loop.started", {})
    reason = "stopped"
    said = ""  # what build last said it waits for: said again only when it changes, or after a turn
    watcher.start()
    try:
        while not stopper.stopping:
            budget = budget_hit(ws.config.build, turns, started, cost, governor.run_budget_spent())
            if budget:
                governor.journal.append("run.budget_exhausted", {"budget": budget, "turns": turns, "cost_usd": cost})
                echo(f"build-loop: stopping cleanly: {budget}")
                reason = budget
                break
            outcome: Outcome = governor.iterate()
            if outcome.decision in ("idle", "paused"):
                waiting = _waiting(governor, outcome)
                if waiting != said:
                    echo(waiting)
                said = waiting
            else:
                echo(outcome.message)
                said = ""
            if outcome.decision == "budget_exhausted":
                governor.journal.append("run.budget_exhausted", {"budget": outcome.message, "turns": turns, "cost_usd": cost})
                reason = outcome.message
                break
            if outcome.decision not in ("idle", "already_green", "interrupted", "paused", "blocked"):
                turns += 1
            cost += outcome.cost_usd or 0.0
            if outcome.decision == "rate_limited":
                limit_waits += 1
                wait = limit_wait(outcome.resets_at, limit_waits)
                governor.journal.append("limit.wait", {"seconds": round(wait, 1), "resets_at": outcome.resets_at})
                echo(f"build-loop: usage limit; waiting {wait:.0f}s before resuming")
                stopper.event.wait(wait)
                continue
            limit_waits = 0
            if outcome.decision in ("idle", "paused"):
                watcher.wait(ws.config.build.idle_poll_seconds, stopper.event)
    finally:
        watcher.stop()
        governor.journal.append("loop.stopped", {"signal": stopper.signal_name, "cause": stopper.cause, "reason": reason,
                                              "turns": turns})
    return reason
