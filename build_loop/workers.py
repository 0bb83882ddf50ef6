"""Parallel workers (build.workers = N > 1): the scheduler of build-loop run.

    head (this thread): recover every open iteration -> the fix_plan -> the ready items (dependencies met, not
        blocked, write scope apart from every item in flight) -> each to a free lane, numbered in order, from main's
        head at that moment -> wait for any turn to end -> report it, count it against the budgets -> again
    lane K (a thread): a Governor on lane K (build_loop/lanes.py) runs the whole governed turn: sandbox, fence,
        guards, reaping, budgets, gateway; a change its sensors keep goes through the integrator, the one writer of
        main, which re-measures it on main before committing (build_loop/integrator.py)

Threads, not processes: a turn's work is done by its child processes (the agent, sensors, git), which run at once
in their own cgroups. Each lane opens its own journal connection; SQLite serialises the appends into one chain.
SIGTERM cancels every turn in flight (each rolls back and is journaled 'abandoned'); a SIGKILL leaves their
iterations open, and the next start closes each (build_loop/recovery.py): main holds only what was committed.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING

from build_loop import budgets
from build_loop.escalation import agent_broken, agent_setup
from build_loop.history import item_history, next_iteration
from build_loop.integrator import Integrator
from build_loop.lane_governor import LaneGovernor
from build_loop.lanes import Lane
from build_loop.measure import Measurer
from build_loop.picker import current_plan, done_items, ready_items, why_nothing
from build_loop.reactions import react
from build_loop.recovery import recover
from build_loop.remote_lanes import RemoteLanes
from build_loop.run import MAX_LIMIT_WAIT, before_first_plan, budget_hit, limit_wait
from build_loop.turn import Options, Outcome, Shared, Spend
from canon.scope import may_overlap
from canon.store import CanonStore
from shared.atomic import file_lock
from shared.checks.oracle import check_limits
from shared.contracts.blocks import current_blocks
from shared.contracts.fix_plan import FixPlan, Item
from shared.daemon import Stopper
from shared.git import GitRepo
from shared.journal import Journal
from shared.watch import Watcher
from shared.workspace import Workspace

if TYPE_CHECKING:
    from build_loop.gateway.server import Gateway  # aiohttp: imported only when a rung uses the gateway

NOT_COUNTED = ("idle", "already_green", "interrupted", "paused", "blocked", "abandoned")


@dataclass(frozen=True)
class InFlight:
    lane: int
    item: Item
    n: int
    started: float


class Workers:
    def __init__(self, ws: Workspace, options: Options, *, count: int, gateway: Gateway | None,
                 echo: Callable[[str], None], stopper: Stopper, remote: RemoteLanes | None = None) -> None:
        self.ws, self.options, self.count, self.gateway, self.echo, self.stopper = (
            ws, options, count, gateway, echo, stopper)
        self.main = GitRepo.adopt(ws.code, ws.code_git)
        self.canon_store = CanonStore(ws.canon)
        self.journal = Journal.for_role(ws, "build")
        self.dir = ws.role_dir("build")
        self.spend = Spend()
        limits = check_limits(ws.config)
        self.integrator = Integrator(self.main, Measurer(ws, self.canon_store, self.dir, limits, tree=ws.code))
        self.agent_setup = agent_setup(ws, options.agent_command)
        self.remote = remote  # with [cluster] backend = "ray": each turn runs as a task on the cluster
        self.flying: dict[Future[Outcome], InFlight] = {}
        self.turns, self.cost, self.started = 0, 0.0, time.monotonic()
        self.next_n = 0
        self.limited_until = 0.0  # a usage limit: no new turn starts before this (epoch seconds)
        self.limit_waits = 0
        self.said = ""

    # the run ------------------------------------------------------------------------------------
    def serve(self) -> str:
        """Returns why the run ended."""
        watcher = Watcher([(self.ws.plan_dir, False)], debounce=0.2, wanted=lambda p: p.name == "fix_plan.json")
        reason = "stopped"
        with file_lock(self.dir / "iterate.lock", wait=False, what="build-loop with parallel workers"):
            recovered = recover(self.journal, self.main)
            if recovered is not None:
                self.echo(f"build-loop: {recovered.message}")
            self.next_n = next_iteration(self.journal)
            self.journal.append("loop.started", {"workers": self.count, "backend": self.ws.config.cluster.backend})
            where = (f"turns run as tasks on the Ray cluster at {self.ws.config.cluster.address}" + (
                f", the gateway's door for the nodes at {self.remote.door.address}" if self.remote.door else "")
                if self.remote else "each in its own lane (state/build/lanes/K)")
            self.echo(f"build-loop: {self.count} workers, {where}; main is written only by the integrator")
            watcher.start()
            pool = ThreadPoolExecutor(self.count, thread_name_prefix="lane")
            try:
                reason = self._loop(pool, watcher)
            except BaseException:
                self.stopper.event.set()  # a lane or the head failed: the other turns in flight roll back
                raise
            finally:
                self._drain()
                pool.shutdown(wait=True)
                watcher.stop()
                self.journal.append("loop.stopped", {"signal": self.stopper.signal_name, "cause": self.stopper.cause,
                                                     "reason": reason, "turns": self.turns, "workers": self.count})
                self.journal.close()
                if self.remote is not None:
                    self.remote.close()
        return reason

    def _loop(self, pool: ThreadPoolExecutor, watcher: Watcher) -> str:
        while not self.stopper.stopping:
            budget = budget_hit(self.ws.config.build, self.turns, self.started, self.cost,
                                budgets.run_spent(self.ws.config.gateway, self.spend.tokens, self.spend.cost))
            if budget:
                self.journal.append("run.budget_exhausted", {"budget": budget, "turns": self.turns,
                                                             "cost_usd": self.cost})
                self.echo(f"build-loop: stopping cleanly: {budget}" + (
                    f"; letting the {len(self.flying)} turn(s) in flight finish" if self.flying else ""))
                return budget
            waiting = self._dispatch(pool)
            if not self.flying:
                if waiting != self.said:
                    self.echo(waiting)
                self.said = waiting
                pause = max(0.0, self.limited_until - time.time())
                watcher.wait(min(pause, MAX_LIMIT_WAIT) if pause else self.ws.config.build.idle_poll_seconds,
                             self.stopper.event)
                continue
            finished, _ = wait(list(self.flying), timeout=1.0, return_when=FIRST_COMPLETED)
            for future in finished:
                self._finished(future)
        return "stopped"

    def _dispatch(self, pool: ThreadPoolExecutor) -> str:
        """Start a turn in every free lane that has a ready item; returns what build waits for when it starts none."""
        if len(self.flying) >= self.count:
            return ""  # every lane busy: nothing to read until one ends
        plan, why = current_plan(self.ws, self.canon_store, self.main)
        if plan is None:
            return before_first_plan(self.ws) if not self.ws.fix_plan_json.exists() else f"build-loop: {why}"
        broken = agent_broken(self.journal, self.agent_setup, plan.canon_version)
        if broken:
            return broken
        reaction = react(self.ws, self.journal, plan, self.ws.config.build.rungs,
                         lambda item_id: item_history(self.journal, item_id, plan.canon_version).rung)
        if reaction is not None:
            self.echo(reaction.message)
            if reaction.pause:
                return reaction.message
        if time.time() < self.limited_until:
            return f"build-loop: usage limit; no new turn before {time.strftime('%H:%M:%S', time.localtime(self.limited_until))}"
        max_turns = self.ws.config.build.max_turns
        free = [lane for lane in range(1, self.count + 1) if lane not in {f.lane for f in self.flying.values()}]
        in_flight = tuple(f.item for f in self.flying.values())
        for item in ready_items(self.ws, self.journal, self.main, plan, in_flight):
            if not free or (max_turns and self.turns + len(self.flying) >= max_turns):
                break
            if any(_clashes(item, other) for other in in_flight):
                continue
            self._start(pool, free.pop(0), plan, item)
            in_flight += (item,)
        if self.flying:
            return ""
        blocks = current_blocks(self.journal, plan.canon_version)
        per_unblock = self.ws.config.build.max_attempts * self.ws.config.build.rounds
        return f"build-loop: {why_nothing(plan, done_items(self.journal, self.main, plan), blocks, per_unblock)}"

    def _start(self, pool: ThreadPoolExecutor, lane: int, plan: FixPlan, item: Item) -> None:
        canon = self.canon_store.load()
        history = item_history(self.journal, item.id, canon.version)
        n, self.next_n = self.next_n, self.next_n + 1
        base = self.main.head()
        assert base is not None
        future = pool.submit(self._lane_turn, lane, plan, item, canon, history, n, base)
        self.flying[future] = InFlight(lane, item, n, time.monotonic())
        self.said = ""

    def _lane_turn(self, lane: int, *args: object) -> Outcome:
        governor = LaneGovernor(self.ws, self.options, lane=Lane.of(self.ws, lane), integrator=self.integrator,
                                shared=Shared(self.spend), cancel=self.stopper.event, gateway=self.gateway)
        try:
            if self.remote is not None:
                return self.remote.turn(governor, *args)  # type: ignore[arg-type]
            return governor.lane_turn(*args)  # type: ignore[arg-type]
        finally:
            governor.close()

    def _finished(self, future: Future[Outcome]) -> None:
        flight = self.flying.pop(future)
        outcome = future.result()  # a lane's own failure (git, disk) stops the run; recovery closes what is open
        self.echo(f"lane {flight.lane}: {outcome.message}")
        if outcome.decision not in NOT_COUNTED:
            self.turns += 1
        self.cost += outcome.cost_usd or 0.0
        if outcome.decision == "rate_limited":
            self.limit_waits += 1
            wait_s = limit_wait(outcome.resets_at, self.limit_waits)
            self.limited_until = max(self.limited_until, time.time() + wait_s)
            self.journal.append("limit.wait", {"seconds": round(wait_s, 1), "resets_at": outcome.resets_at,
                                               "lane": flight.lane})
            self.echo(f"build-loop: usage limit; no new turn for {wait_s:.0f}s (turns in flight go on)")
        elif outcome.decision not in NOT_COUNTED:
            self.limit_waits = 0

    def _drain(self) -> None:
        """Let the turns in flight end (cancelled ones roll back), reporting each."""
        while self.flying:
            finished, _ = wait(list(self.flying), timeout=5.0, return_when=FIRST_COMPLETED)
            for future in finished:
                try:
                    self._finished(future)
                except Exception as exc:  # already stopping: say it, and let recovery close it next start
                    self.echo(f"build-loop: a lane failed while stopping: {exc}")


def _clashes(item: Item, other: Item) -> bool:
    return item.id == other.id or may_overlap(item.scope, other.scope)


def serve_workers(ws: Workspace, options: Options, *, gateway: Gateway | None, echo: Callable[[str], None],
                  stopper: Stopper, remote: RemoteLanes | None = None) -> str:
    """remote: a connection to the Ray cluster, made before build restricted itself ([cluster] backend = "ray")."""
    if ws.config.cluster.backend == "ray" and remote is None:
        remote = RemoteLanes(ws, gateway)
        remote.open()
    return Workers(ws, options, count=ws.config.build.workers, gateway=gateway, echo=echo, stopper=stopper,
                   remote=remote).serve()

