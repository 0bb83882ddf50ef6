"""The governor: one iteration of build, outside the agent, deciding keep or roll back from sensors.

One Turn value (build_loop/turn.py) passes through the stages, each a method below:

    next item (picker) -> _checkpoint (refs, the sensors' reading) -> _prompt -> _open_route (the gateway's lease,
    within budgets) -> _start (journal iteration.started) -> _run_agent (fresh process in its own view, session and
    cgroup; timeout, halted by the gateway) -> _rate_limited -> _guard_refs -> _fence_and_fix -> _no_change (agent_failed
    or stall) -> _judge (sensors, ratchet) -> _keep (commit with trailers) or _roll_back -> _end (iteration.ended) -> escalate

Crash safety: 'iteration.started' is journaled before the agent runs and 'iteration.ended' after the decision; a
keep journals its commit before publishing it. If build dies in between, the next start finds the open iteration
(build_loop/recovery.py) and records the keep or rolls the work tree back to the checkpoint.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from build_loop import agents, budgets, guards
from build_loop.agent_output import read_turn
from build_loop.escalation import agent_broken, agent_setup, escalate
from build_loop.fence import FenceLimits, FenceReport, fence, protected_patterns, snapshot
from build_loop.gateway import gateway_for
from build_loop.gateway.lease import Lease
from build_loop.history import ItemHistory, item_history, next_iteration
from build_loop.integrator import publish_keep
from build_loop.measure import Measurer
from build_loop.picker import current_plan, next_item
from build_loop.prompt import context_outputs, turn_prompt
from build_loop.reactions import Reaction, react
from build_loop.recovery import recover
from build_loop.sensors import Reading, refusal, regressions
from build_loop.turn import Options, Outcome, Shared, Spend, Turn
from canon.model import Canon
from canon.store import CanonStore
from shared.atomic import file_lock, write_json, write_text
from shared.checks.oracle import check_limits
from shared.contracts import current_turn
from shared.contracts.fix_plan import FixPlan, Item
from shared.git import Entry, GitRepo
from shared.isolation.kinds import turn_view
from shared.isolation.netrelay import relay_failure
from shared.isolation.policy import sandbox_argv
from shared.journal import Journal
from shared.measurement.excerpt import excerpt as bounded
from shared.process import Request, become_subreaper, run
from shared.workspace import Workspace

if TYPE_CHECKING:
    from build_loop.gateway.server import Gateway  # aiohttp: imported only when a rung uses the gateway


class Governor:
    """A single worker's governor: its turns run in the code's own work tree and a kept change is committed onto main.
    Parallel workers each run a LaneGovernor (build_loop/lane_governor.py), which overrides where and how."""

    lane_number: int | None = None  # which lane, for a LaneGovernor

    def __init__(self, ws: Workspace, options: Options | None = None, *, cancel: threading.Event | None = None,
                 gateway: Gateway | None = None, shared: Shared | None = None) -> None:
        """shared: what a lane's governor shares with the other lanes (the run's spend, the journal to use); the
        gateway is then the scheduler's to stop. A single worker's governor stops the gateway it was given."""
        self.ws = ws
        self.options = options or Options()
        self.cancel = cancel or threading.Event()
        self.main = GitRepo.adopt(ws.code, ws.code_git)
        self.code = self.main  # the repository the turn works in: main, or a lane's
        self.tree = ws.code  # the work tree the agent writes and the sensors read
        self.canon_store = CanonStore(ws.canon)
        self.journal = shared.journal if shared and shared.journal is not None else Journal.for_role(ws, "build")
        self.dir = ws.role_dir("build")
        # a subreaper collects any orphan's exit, which is safe only while one child runs at a time: lanes run several
        self.subreaper = become_subreaper() if shared is None else False
        self.agent_setup = agent_setup(ws, self.options.agent_command)
        # the model gateway, when a rung talks to a provider through it (build-loop's CLI starts it before build
        # restricts itself); what this run has spent through it
        self.gateway = gateway if gateway is not None or self.options.agent_command else gateway_for(ws)
        self.owns_gateway = shared is None
        self.spend = shared.spend if shared else Spend()
        self.limits = check_limits(ws.config)  # one turn's or one sensor's share: the same as one check's
        self.measure = Measurer(ws, self.canon_store, self.dir, self.limits, tree=self.tree, cancel=self.cancel)

    def close(self) -> None:
        if self.gateway is not None and self.owns_gateway:
            self.gateway.stop()
        self.journal.close()

    def run_budget_spent(self) -> str:
        """Why this run may not start another turn through the gateway, or ""."""
        return budgets.run_spent(self.ws.config.gateway, self.spend.tokens, self.spend.cost)

    # one iteration ------------------------------------------------------------------------------
    def iterate(self) -> Outcome:
        with file_lock(self.dir / "iterate.lock", what="a build iteration"):
            recovered = recover(self.journal, self.code)  # an iteration a crash left open
            if recovered is not None:
                return recovered
            return self._iterate()

    def _iterate(self) -> Outcome:
        plan, why = current_plan(self.ws, self.canon_store, self.code)
        if plan is None:
            return Outcome("idle", why)
        broken = agent_broken(self.journal, self.agent_setup, plan.canon_version)
        if broken:
            return Outcome("paused", broken)
        reaction = self._react(plan)
        if reaction is not None and reaction.pause:
            return Outcome("paused", reaction.message)
        outcome = self._next(plan)
        if reaction is not None:
            return dataclasses.replace(outcome, message=f"{reaction.message}\n{outcome.message}")
        return outcome

    def _next(self, plan: FixPlan) -> Outcome:
        item, why = next_item(self.ws, self.journal, self.code, plan)
        if item is None:
            return Outcome("idle", why)
        canon = self.canon_store.load()
        return self._turn(plan, item, canon, item_history(self.journal, item.id, canon.version))

    def _react(self, plan: FixPlan) -> Reaction | None:
        return react(self.ws, self.journal, plan, self.ws.config.build.rungs,
                     lambda item_id: item_history(self.journal, item_id, plan.canon_version).rung)

    def _rung(self, history: ItemHistory) -> str:
        return self.ws.config.build.rungs[min(history.rung, len(self.ws.config.build.rungs) - 1)]

    # the turn, stage by stage -------------------------------------------------------------------
    def _turn(self, plan: FixPlan, item: Item, canon: Canon, history: ItemHistory, n: int | None = None) -> Outcome:
        turn = self._checkpoint(plan, item, canon, history, n)
        try:
            if not turn.before.failing and not item.held_back:  # held-back tests: only plan sees them fail
                return self._already_green(turn)
            self._prompt(turn)
            spent = self._open_route(turn)
            if spent is not None:
                return spent
            self._start(turn)
            return self._decide(turn)
        finally:
            shutil.rmtree(turn.scratch, ignore_errors=True)

    def _checkpoint(self, plan: FixPlan, item: Item, canon: Canon, history: ItemHistory, n: int | None) -> Turn:
        """The turn's number, folders, checkpoint and refs, and the sensors' reading there."""
        n = n if n is not None else next_iteration(self.journal)
        scratch = self.dir / "tmp" / f"iteration-{n}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        canon_dir = self.measure.canon_snapshot(canon)
        checkpoint = self.code.head()
        assert checkpoint is not None
        project = self.measure.environment(self.code, checkpoint)
        sensors = self.measure.sensors(item, canon, canon_dir, project)
        before = self.measure.at_checkpoint(checkpoint, sensors, canon_dir, scratch, project)
        return Turn(n, item, canon, plan, history, self.dir / "iterations" / str(n), scratch, checkpoint,
                    self.code.ref_state(), canon_dir, sensors, before, project, rung=self._rung(history))

    def _already_green(self, turn: Turn) -> Outcome:
        self.journal.append("iteration.started", {**self._where(turn), "checkpoint": turn.checkpoint,
                                                  "refs": guards.refs_json(turn.refs), "agent": None})
        self.journal.append("iteration.ended", {**turn.base, "decision": "already_green",
                                                "reason": "every sensor is green at the checkpoint; nothing to improve"})
        return Outcome("already_green", f"iteration {turn.n}: {turn.item.id} is already green here; left for plan to "
                       "re-measure", turn.n, turn.item.id)

    def _prompt(self, turn: Turn) -> None:
        context = context_outputs(self.ws, turn.scratch, self.limits, reap_orphans=self.subreaper, tree=self.tree)
        turn.prompt = turn_prompt(self.ws, turn, context)
        turn.folder.mkdir(parents=True, exist_ok=True)
        write_text(turn.folder / "prompt.md", turn.prompt)

    def _open_route(self, turn: Turn) -> Outcome | None:
        """For a rung that talks to a provider through the gateway: the turn's lease within its budgets; an Outcome
        instead when a budget is already spent."""
        preset = None if self.options.agent_command else self.ws.config.agents.get(turn.rung)
        if preset is None or not preset.provider:
            return None
        assert self.gateway is not None
        return budgets.open_lease(self.ws.config.gateway, self.gateway, self.journal, turn, preset, self.spend)

    def _start(self, turn: Turn) -> None:
        route = None
        if turn.lease is not None:
            wire = self.ws.config.gateway.providers[turn.lease.provider].wire
            route = agents.ModelRoute(turn.lease.url, turn.lease.token, wire)
        try:
            turn.invocation = agents.invocation(self.ws.config, turn.rung, turn.folder / "prompt.md",
                                                override=self.options.agent_command, route=route)
        except Exception:
            if turn.lease is not None and self.gateway is not None:
                self.gateway.close(turn.lease)
            raise
        self.journal.append("iteration.started", {**self._where(turn), "checkpoint": turn.checkpoint,
                                                  "refs": guards.refs_json(turn.refs), "agent": turn.invocation.label,
                                                  "rung": turn.rung, "failing_before": turn.before.failing})
        current_turn.started(self.dir, n=turn.n, item=turn.item.id, agent=turn.invocation.label,
                             turn_timeout=self.options.turn_timeout or self.ws.config.build.turn_timeout,
                             lane=self.lane_number)

    def _where(self, turn: Turn) -> dict[str, Any]:
        """The turn's identity as journaled, with its lane when it has one (recovery reads it)."""
        return {**turn.base, "lane": self.lane_number} if self.lane_number is not None else turn.base

    def _decide(self, turn: Turn) -> Outcome:
        self._run_agent(turn)
        assert turn.ran is not None and turn.report is not None
        if turn.ran.cancelled:
            self._roll_back(turn)
            return self._end(turn, "abandoned", "build-loop was asked to stop during the turn; rolled back")
        limited = self._rate_limited(turn)
        if limited is not None:
            return limited
        self._guard_refs(turn)
        fenced = self._fence_and_fix(turn)
        capped = fenced.capped or turn.ran.capped
        if capped:
            self._roll_back(turn)
            return self._failed(turn, "rollback", f"capped: {capped}; the whole turn was rolled back", changed=[],
                                feedback=turn.before.excerpts)
        entries = snapshot(self.code, fenced.kept)
        turn.facts["left"] = {path: entry.blob if entry else None for path, entry in entries.items()}  # for its diff
        if not entries:
            return self._no_change(turn)
        # what is left of the turn's budget since its agent started (the fence and the guards took their share) is
        # the build's, if the change needs a new environment
        left = (self.options.turn_timeout or self.ws.config.build.turn_timeout) - (time.time() - turn.ran.started)
        setup = self.measure.for_change(self.code, turn, entries, left)  # the tamper scan, and the change's environment
        if setup.refusal:
            self._roll_back(turn)
            return self._failed(turn, "rollback", setup.refusal, changed=sorted(entries), feedback=setup.feedback, **setup.facts)
        turn.project, turn.sensors = setup.project, setup.sensors  # the integrator re-measures with these too
        return self._judge(turn, entries)

    def _run_agent(self, turn: Turn) -> None:
        """The agent's fresh process in its sandbox (and, under gateway-only, its own network), to its budget."""
        assert turn.invocation is not None
        invocation, lease = turn.invocation, turn.lease
        (agent_scratch := turn.scratch / "agent").joinpath("home").mkdir(parents=True)  # the turn's HOME, in its view
        relay = ((self.gateway.socket_path, self.gateway.port)  # the agent's one way out: 127.0.0.1:port, relayed
                 if lease is not None and self.gateway is not None and self.ws.config.gateway.network == "gateway-only" else None)
        env = {key: os.environ[key] for key in self.ws.config.build.env_allow if key in os.environ}
        python = turn.project.python if turn.project else sys.executable  # the tests run there
        view = turn_view(self.ws, invocation.argv, env, home=agent_scratch / "home", python=python,
                         read=(turn.canon_dir, turn.folder / "prompt.md"))
        argv = sandbox_argv(self.ws, invocation.argv, [self.tree, agent_scratch, *invocation.state_paths],
                            gateway_relay=relay, view=view)
        env.update({"BANACH_PROMPT_FILE": str(turn.folder / "prompt.md"), "BANACH_CANON": str(turn.canon_dir),
                    "BANACH_ITEM": turn.item.id, "BANACH_ITERATION": str(turn.n), "TMPDIR": str(agent_scratch),
                    "BANACH_PYTHON": python})
        env.update(agents.preset_env(invocation, agent_scratch))
        turn.control = self.code.control_files()
        try:
            turn.ran = ran = run(Request(argv, cwd=self.tree, env=env, stdin=turn.prompt,
                                         timeout=self.options.turn_timeout or self.ws.config.build.turn_timeout,
                                         limits=self.limits),
                                 reap_orphans=self.subreaper, cancel=self.cancel, halt=lease.halt if lease else None)
        finally:
            if lease is not None and self.gateway is not None:
                self.gateway.close(lease)
        write_text(turn.folder / "output.txt", ran.stdout + ("\n--- stderr ---\n" + ran.stderr if ran.stderr.strip() else ""))
        preset_name = "" if self.options.agent_command else turn.rung
        turn.report = report = read_turn(self.ws.config, preset_name, ran.stdout, ran.stderr, ran.returncode,
                                         now=time.time(), timed_out=ran.timed_out)
        turn.facts = {"kind": turn.item.kind, "area": turn.item.area, "failing_before": turn.before.failing,
                      "agent": invocation.label, "exit_code": ran.returncode, "timed_out": ran.timed_out,
                      "duration": round(ran.duration, 3), "reaped": ran.reaped, "cost_usd": report.cost_usd,
                      "claimed_success": report.claimed_success, "capped": ran.capped}
        if lease is not None:
            self._journal_calls(turn, lease)
            turn.facts.update({"cost_usd": lease.cost_usd, "model_calls": sum(1 for c in lease.calls if c.model_call),
                               "tokens": lease.tokens, "gateway_stop": lease.stop_reason or None})
            if lease.stop_reason == "budget":
                turn.facts["budget_stop"] = lease.stop_message

    def _journal_calls(self, turn: Turn, lease: Lease) -> None:
        for call in lease.calls:
            self.journal.append("model.call", {"n": turn.n, "item": turn.item.id, "canon_version": turn.canon.version,
                                               **call.as_json()})
        self.spend.add(lease.tokens, lease.cost_usd or 0.0)

    def _rate_limited(self, turn: Turn) -> Outcome | None:
        """A usage or rate limit, seen by the gateway or in the CLI's own words: neither progress nor failure."""
        lease, report = turn.lease, turn.report
        assert report is not None
        if lease is not None and lease.stop_reason == "rate_limited":
            self._roll_back(turn)
            return self._end(turn, "rate_limited", f"the gateway ended the turn: {lease.stop_message}; neither progress "
                             "nor failure", resets_at=lease.resets_at)
        if report.rate_limited:
            self._roll_back(turn)
            return self._end(turn, "rate_limited", "the agent hit a usage or rate limit: neither progress nor failure",
                             resets_at=report.resets_at)
        return None

    def _guard_refs(self, turn: Turn) -> None:
        assert turn.control is not None
        tampered = self.code.restore_control_files(turn.control)
        found = guards.violations(turn.refs, self.code.ref_state()) + [f"the git directory's {name} changed"
                                                                        for name in tampered]
        if found:
            self.code.restore_refs(turn.refs)
        turn.refs_checked = True
        turn.facts["guard_violations"] = found

    def _fence_and_fix(self, turn: Turn) -> FenceReport:
        """The fence, then the fix commands (sandboxed, on the work tree), then the fence again."""
        build = self.ws.config.build
        limits = FenceLimits(build.max_file_bytes, build.max_changed_paths)
        fenced = fence(self.code, turn.checkpoint, turn.item.scope, protected_patterns(self.ws), limits)
        if not fenced.capped and build.fix_commands:
            self.measure.fix(turn, reap_orphans=self.subreaper)
            fenced = fenced.merge(fence(self.code, turn.checkpoint, turn.item.scope, protected_patterns(self.ws), limits))
        turn.facts.update({"reverted": list(fenced.reverted), "hostile": list(fenced.hostile),
                           "ignored_removed": list(fenced.ignored), "scope_fighting": bool(fenced.reverted or fenced.hostile)})
        if fenced.reverted or fenced.hostile:
            self.journal.append("scope.fighting", {"n": turn.n, "item": turn.item.id, "reverted": list(fenced.reverted),
                                                   "hostile": list(fenced.hostile)})
        turn.fenced = fenced
        return fenced

    def _no_change(self, turn: Turn) -> Outcome:
        """Nothing kept: the agent did not run at all (not an attempt on the item), or it ran and stalled."""
        ran = turn.ran
        assert ran is not None
        self._roll_back(turn)
        # a relay that died: the agent never reached its model, whether it exited or retried until the timeout
        relay = relay_failure(ran.stderr) if turn.lease is not None and not turn.facts.get("model_calls") else ""
        if relay or ran.returncode != 0 and not ran.timed_out and not ran.halted:
            tail = relay or "\n".join(ran.stderr.strip().splitlines()[-15:])
            said = f"no call reached the gateway: {relay}" if relay else f"the agent exited with code {ran.returncode} " \
                f"and changed nothing: {tail.splitlines()[-1] if tail else 'no output on stderr'}"
            return self._failed(turn, "agent_failed", said, changed=[], stderr_tail=tail, agent_setup=self.agent_setup,
                                feedback=turn.before.excerpts)
        return self._failed(turn, "stall", "the turn left no change in scope" + (" (timed out)" if ran.timed_out else ""),
                            changed=[], feedback=turn.before.excerpts)

    def _judge(self, turn: Turn, entries: dict[str, Entry | None]) -> Outcome:
        """The sensors on the kept change (flipped checks measured again: build_loop/flakes.py), the ratchet, and keep or
        roll back."""
        settled = self.measure.settle(turn, self.measure.read(turn.sensors, turn.canon_dir, turn.scratch, turn.project),
                                      self.code)
        if self.cancel.is_set():
            self._roll_back(turn)
            return self._end(turn, "abandoned", "build-loop was asked to stop while the sensors ran; rolled back")
        before, after = settled.before, settled.after
        facts = {"changed": sorted(entries), "failing_after": after.failing, "regressions": regressions(before, after),
                 "score_before": before.score, "score_after": after.score, "fingerprint": after.fingerprint}
        facts.update({"held_back": True} if turn.item.held_back else {}, **({"flaky": settled.flaky} if settled.flaky else {}))
        reason = refusal(before, after, unseen=turn.item.held_back)
        if reason:
            self._roll_back(turn)
            excerpt = bounded("\n".join(after.excerpts.values()), lines=60, chars=6000)
            return self._failed(turn, "rollback", reason, **facts, excerpt=excerpt, feedback=after.excerpts)
        return self._accept(turn, entries, after, facts)

    def _accept(self, turn: Turn, entries: dict[str, Entry | None], after: Reading, facts: dict[str, Any]) -> Outcome:
        """A change the sensors kept: committed onto main (a lane's goes through the integrator instead)."""
        commit = self._keep(turn, entries, after)
        write_json(self.dir / "readings" / "last-kept.json", {"commit": commit, **after.as_json()})
        return self._end(turn, "keep", f"failing {len(turn.before.failing)} -> {len(after.failing)}", **facts,
                         commit=commit)

    def _keep(self, turn: Turn, entries: dict[str, Entry | None], after: Reading) -> str:
        """Commit exactly the blobs the fence kept (nothing written since), journal the intent, then publish."""
        return publish_keep(self.code, self.journal, turn, turn.checkpoint, entries, turn.before, after)

    def _roll_back(self, turn: Turn) -> None:
        if turn.control is not None:
            self.code.restore_control_files(turn.control)
        if not turn.refs_checked:
            self.code.restore_refs(turn.refs)
        self.code.rollback(turn.checkpoint)

    def _end(self, turn: Turn, decision: str, reason: str, **extra: Any) -> Outcome:
        if turn.facts.get("budget_stop"):
            reason = f"{reason} (the gateway stopped the turn: {turn.facts['budget_stop']})"
        record = {**self._where(turn), **turn.facts, "decision": decision, "reason": reason, **extra}
        self.journal.append("iteration.ended", record)
        current_turn.ended(self.dir, lane=self.lane_number)
        write_json(turn.folder / "result.json", record)
        return Outcome(decision, f"iteration {turn.n} ({turn.item.id}): {decision}: {reason}", turn.n, turn.item.id,
                       extra.get("commit"), turn.facts.get("cost_usd"), extra.get("resets_at"), record)

    def _failed(self, turn: Turn, decision: str, reason: str, **extra: Any) -> Outcome:
        """An attempt on the item that did not help: it counts toward blocking the item and climbing the ladder."""
        outcome = self._end(turn, decision, reason, **extra)
        escalate(self.journal, self.ws.config.build, turn.item, turn.canon, turn.history, outcome)
        return outcome
