"""plan-loop run: re-plan when canon gets a version or build lands commits (watched with watchdog,
debounced), or on the configured timer; certify when a pass finds nothing."""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from plan_loop.agent_oracle import PlanAgent
from plan_loop.passes import PlanService
from shared.daemon import Stopper, serve
from shared.watch import Watcher


def _is_ref(path: Path) -> bool:
    parts = path.parts
    return "refs" in parts or path.name in ("HEAD", "packed-refs")


def due(service: PlanService, last_timer: float, agent: PlanAgent | None = None) -> str:
    """Why a pass is due now, or '' when the last one still describes (V, C) as judged by this plan agent."""
    config = service.ws.config.plan
    last = service.journal.last("pass")
    head = service.code.head()
    version = service.canon.version()
    if last is None:
        return "no pass yet"
    if version != last.data["canon_version"]:
        return f"canon v{version}" if config.replan_on_canon_change else ""
    if head != last.data["code_commit"]:
        landed = service.code.count_commits(last.data["code_commit"], head or "HEAD")
        if landed >= config.replan_every_commits or not service.code.is_ancestor(last.data["code_commit"], head or "HEAD"):
            return f"{landed} build commit(s) landed"
    if ((last.data.get("plan_agent") or {}).get("identity") or "") != (agent.identity if agent else ""):
        return f"the plan agent changed: now {agent.label}" if agent else "the plan agent was removed"
    if last.data["residual"] == 0 and not last.data.get("fresh"):
        return "certify"
    if config.replan_interval_seconds and time.monotonic() - last_timer >= config.replan_interval_seconds:
        return "timer"
    return ""


def serve_plan(service: PlanService, *, echo: Callable[[str], None], stopper: Stopper,
               agent: PlanAgent | None = None) -> None:
    ws = service.ws
    debounce = ws.config.plan.debounce_seconds
    watcher = Watcher([(ws.canon / ".git", True), (ws.code_repo().git_dir, True)], debounce=debounce, wanted=_is_ref)
    timer = {"last": time.monotonic()}
    service.journal.append("loop.started", {})

    def step() -> bool:
        reason = due(service, timer["last"], agent)
        if not reason:
            return False
        timer["last"] = time.monotonic()
        for report in service.measure(agent=agent):
            echo(report.describe(reason))
        return False

    idle = ws.config.plan.replan_interval_seconds or 30.0
    try:
        serve(step, watcher, stopper, idle_seconds=min(idle, 30.0))
    finally:
        service.journal.append("loop.stopped", {"signal": stopper.signal_name, "cause": stopper.cause})
