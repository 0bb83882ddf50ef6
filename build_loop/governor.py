"""The governor: one iteration of build, outside the agent, deciding keep or roll back from sensors.

    pick -> checkpoint -> prompt -> agent turn (fresh process, own session, budget, sandbox)
         -> ref guards -> fence -> zero change = stall -> fix commands -> fence -> sensors
         -> ratchet -> keep (commit with trailers) or roll back (negative knowledge)
         -> ladder / blocked

Crash safety: 'iteration.started' is journaled before the agent runs and 'iteration.ended' after the
decision. If build dies in between, the next start finds the open iteration, and either records the
keep (when its commit landed: a commit is atomic) or rolls the work tree back to the checkpoint.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from build_loop import agents
from build_loop.fence import FenceLimits, FenceReport, fence, protected_patterns, snapshot
from build_loop.gateway.server import Allowance, Gateway, Lease, gateway_for
from build_loop.history import ItemHistory, item_history, next_iteration, skipped_green
from build_loop.picker import pick
from build_loop.prompt import render
from build_loop.reactions import Reaction, react
from build_loop.sensors import Reading, Sensor, read_sensors, regressions
from canon.model import Canon
from canon.store import CanonStore
from shared.atomic import file_lock, write_json, write_text
from shared.contracts import fix_plan as fix_plan_file
from shared.contracts import trailers
from shared.contracts.blocks import BLOCKED, UNBLOCK_HINT, current_blocks, explain
from shared.contracts.fix_plan import FixPlan, Item
from shared.export import remove_tree
from shared.git import Entry, GitRepo, RefState
from shared.isolation import sandbox_argv
from shared.journal import Journal
from shared.process import Limits, Request, become_subreaper, run
from shared.workspace import Workspace

AGENT_FAILURES_TO_PAUSE = 3


@dataclass(frozen=True)
class Options:
    agent_command: str = ""
    turn_timeout: float | None = None


@dataclass(frozen=True)
class Outcome:
    decision: str  # keep, rollback, stall, agent_failed, already_green, rate_limited, abandoned, idle, interrupted, paused
    message: str
    n: int | None = None
    item: str | None = None
    commit: str | None = None
    cost_usd: float | None = None
    resets_at: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


class Governor:
    def __init__(self, ws: Workspace, options: Options | None = None, *, cancel: threading.Event | None = None,
                 gateway: Gateway | None = None) -> None:
        self.ws = ws
        self.options = options or Options()
        self.cancel = cancel or threading.Event()
        self.code = GitRepo.adopt(ws.code, ws.code_git)
        self.canon_store = CanonStore(ws.canon)
        self.journal = Journal.for_role(ws, "build")
        self.dir = ws.role_dir("build")
        self.subreaper = become_subreaper()
        # which agent set-up a failure belongs to: a changed banach.toml or --agent-command gets a fresh try
        agent_setup = {"command": self.options.agent_command, "build": ws.config.build.model_dump(mode="json"),
                       "agents": {name: preset.model_dump(mode="json") for name, preset in ws.config.agents.items()}}
        self.agent_setup = hashlib.sha256(json.dumps(agent_setup, sort_keys=True).encode()).hexdigest()[:16]
        # the model gateway, when a rung talks to a provider through it (build-loop's CLI starts it before build
        # restricts itself); what this run has spent through it
        self.gateway = gateway if gateway is not None or self.options.agent_command else gateway_for(ws)
        self.run_tokens, self.run_cost = 0, 0.0

    def close(self) -> None:
        if self.gateway is not None:
            self.gateway.stop()
        self.journal.close()

    def run_budget_spent(self) -> str:
        """Why this run may not start another turn through the gateway, or ""."""
        gateway = self.ws.config.gateway
        if gateway.max_run_tokens and self.run_tokens >= gateway.max_run_tokens:
            return f"gateway token budget: {self.run_tokens} of {gateway.max_run_tokens} tokens used by this run"
        if gateway.max_run_cost_usd and self.run_cost >= gateway.max_run_cost_usd:
            return f"gateway cost budget: ${self.run_cost:.4f} of ${gateway.max_run_cost_usd:.4f} used by this run"
        return ""

    # recovery -----------------------------------------------------------------------------------
    def recover(self) -> Outcome | None:
        """Close an iteration a crash left open. Only the governor's own record counts: the keep is recorded
        when HEAD is exactly the commit journaled as intended (its tree and parent) before it was published;
        anything else (a trailer, a ref, a lock file the agent could have made) is rolled back to the checkpoint."""
        started = self.journal.last("iteration.started")
        if started is None:
            return None
        ended = self.journal.last("iteration.ended")
        if ended is not None and ended.seq > started.seq:
            return None
        data = started.data
        n, checkpoint = data["n"], data["checkpoint"]
        intent = self.journal.last("iteration.committing")
        head = self.code.head()
        if head is not None and intent is not None and intent.seq > started.seq and head == intent.data["commit"]:
            tree, parents = self.code.commit_parts(head)
            if tree == intent.data["tree"] and parents == (intent.data["parent"],):
                self.code.rollback(head)  # the work tree may hold what a sensor wrote before the crash
                self.journal.append("iteration.ended", {"n": n, "item": data["item"], "decision": "keep", "commit": head,
                                                        "reason": "recovered: the journaled commit landed before the crash",
                                                        "plan_pass": data.get("plan_pass")})
                return Outcome("keep", f"iteration {n} had committed before it was interrupted; recorded the keep", n,
                               data["item"], head)
        state = RefState(data["refs"]["head_symbolic"], checkpoint, tuple(tuple(r) for r in data["refs"]["refs"]), ())  # type: ignore[misc]
        self.code.restore_refs(state)
        self.code.rollback(checkpoint)
        self.journal.append("iteration.ended", {"n": n, "item": data["item"], "decision": "interrupted",
                                                "reason": "build-loop stopped mid-iteration; work tree rolled back to "
                                                          "the checkpoint",
                                                "plan_pass": data.get("plan_pass")})
        return Outcome("interrupted", f"iteration {n} was interrupted; rolled back to checkpoint {checkpoint[:12]}", n,
                       data["item"])

    # one iteration ------------------------------------------------------------------------------
    def iterate(self) -> Outcome:
        with file_lock(self.dir / "iterate.lock", what="a build iteration"):
            recovered = self.recover()
            if recovered is not None:
                return recovered
            return self._iterate()

    def _plan(self) -> tuple[FixPlan | None, str]:
        plan = fix_plan_file.read(self.ws.fix_plan_json)
        if plan is None:
            return None, "no fix_plan yet: waiting for plan-loop to measure"
        version = self.canon_store.version()
        if plan.canon_version != version:
            return None, f"fix_plan measures canon v{plan.canon_version}, canon is v{version}: waiting for plan-loop"
        head = self.code.head()
        if head is None or not self.code.is_ancestor(plan.code_commit, head):
            return None, "fix_plan measures a commit that is not in the code's history: waiting for plan-loop"
        return plan, ""

    def _done(self, plan: FixPlan) -> set[str]:
        claimed = {value for _, value in self.code.commits_with_trailer(plan.code_commit, "HEAD", trailers.ITEM)}
        return claimed | skipped_green(self.journal, plan.pass_seq)

    def _first_seen(self) -> dict[str, int]:
        plan_journal = Journal.reader(self.ws.journal_path("plan"))
        seen: dict[str, int] = {}
        if plan_journal is not None:
            with plan_journal:
                for row in plan_journal.rows("pass"):
                    for item_id in row.data.get("items", []):
                        seen.setdefault(item_id, row.seq)
        return seen

    def _iterate(self) -> Outcome:
        plan, why = self._plan()
        if plan is None:
            return Outcome("idle", why)
        broken = self._agent_broken()
        if broken:
            return Outcome("paused", broken)
        reaction = self._react(plan)
        if reaction is not None and reaction.pause:
            return Outcome("paused", reaction.message)
        outcome = self._next(plan)
        if reaction is not None:
            return dataclasses.replace(outcome, message=f"{reaction.message}\n{outcome.message}")
        return outcome

    def _agent_broken(self) -> str:
        """When the agent failed to run on the last AGENT_FAILURES_TO_PAUSE turns with this same set-up, trying
        again burns nothing but time: say what to fix instead."""
        recent = [row.data for row in self.journal.rows("iteration.ended")[-AGENT_FAILURES_TO_PAUSE:]]
        if len(recent) < AGENT_FAILURES_TO_PAUSE or any(
                r.get("decision") != "agent_failed" or r.get("agent_setup") != self.agent_setup for r in recent):
            return ""
        last = recent[-1]
        tail = "\n    ".join(str(last.get("stderr_tail", "")).splitlines()[-8:]) or "(it printed nothing on stderr)"
        return (f"PAUSED: the agent failed to run on the last {len(recent)} turns ({last.get('agent')}: exit code "
                f"{last.get('exit_code')}); its stderr ended with:\n    {tail}\n"
                "Fix the agent's command, installation, key or settings in banach.toml (banach doctor runs it), then "
                "restart build-loop (banach down && banach up, or supervisorctl restart build).")

    def _next(self, plan: FixPlan) -> Outcome:
        blocks = current_blocks(self.journal, plan.canon_version)
        blocked = set(blocks)
        done = self._done(plan)
        item = pick(plan, done=done, blocked=blocked, first_seen=self._first_seen())
        if item is None:
            open_left = len(plan.items) - len(done)
            if blocked and open_left > 0:
                lines = [explain(item_id, block) for item_id, block in sorted(blocks.items())]
                return Outcome("idle", f"nothing to do: {len(blocked)} item(s) blocked, the rest done or waiting on them:\n  "
                               + "\n  ".join(lines) + f"\n{UNBLOCK_HINT}")
            return Outcome("idle", "nothing open that build has not already done: waiting for plan-loop to re-measure")
        canon = self.canon_store.load()
        history = item_history(self.journal, item.id, canon.version)
        return self._turn(plan, item, canon, history)

    def _react(self, plan: FixPlan) -> Reaction | None:
        return react(self.ws, self.journal, plan, self.ws.config.build.rungs,
                     lambda item_id: item_history(self.journal, item_id, plan.canon_version).rung)

    def _canon_snapshot(self, canon: Canon) -> Path:
        target = self.dir / "canon" / canon.commit[:12]
        done = target.with_name(target.name + ".done")
        if not done.exists():
            remove_tree(target)
            self.canon_store.git.export(canon.commit, target)
            done.touch()
        return target

    def _sensors(self, item: Item, canon: Canon, canon_dir: Path) -> list[Sensor]:
        # 'sh -c "CMD \"$@\"" sh ARGS' hands the junit flag of a pytest-kind sensor on to the command
        sensors = [Sensor(s.name, ("/bin/sh", "-c", s.command + (' "$@"' if s.kind == "pytest" else ""), "sh"), s.kind, s.timeout)
                   for s in self.ws.config.build.sensors]
        timeout = self.ws.config.plan.check_timeout
        for rid in item.requirements:
            req = canon.requirements.get(rid)
            if req is None:
                continue
            for index, command in enumerate(req.checks):
                sensors.append(Sensor(f"canon:{rid}:check:{index}", ("/bin/sh", "-c", command), "command", timeout))
            if req.tests:
                sensors.append(Sensor(f"canon:{rid}:tests", (), "conformance", timeout, tuple(req.tests), canon_dir))
        return sensors

    def _sensor_env(self, canon_dir: Path, scratch: Path) -> dict[str, str]:
        env = {key: os.environ[key] for key in self.ws.config.build.env_allow if key in os.environ}
        env.update({"BANACH_CANON": str(canon_dir), "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(scratch),
                    "PYTHONPATH": str(self.ws.code), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "BANACH_PYTHON": sys.executable})
        env.setdefault("PATH", os.environ.get("PATH", "/usr/bin:/bin"))
        return env

    def _read(self, sensors: list[Sensor], canon_dir: Path, scratch: Path) -> Reading:
        # sensors read the work tree and write only their scratch: what they judge is what gets committed
        wrap = lambda argv: sandbox_argv(self.ws, argv, [scratch])
        return read_sensors(sensors, self.ws.code, self._sensor_env(canon_dir, scratch), scratch, wrap, self._limits())

    def _checkpoint_reading(self, head: str, sensors: list[Sensor], canon_dir: Path, scratch: Path) -> Reading:
        key = hashlib.sha256(repr((head, [(s.name, s.argv, s.kind) for s in sensors])).encode()).hexdigest()[:24]
        cache = self.dir / "readings" / f"{key}.json"
        if cache.exists():
            return Reading.from_json(json.loads(cache.read_text()))
        reading = self._read(sensors, canon_dir, scratch)
        write_json(cache, reading.as_json())
        return reading

    def _rung(self, history: ItemHistory) -> str:
        ladder = self.ws.config.build.rungs
        return ladder[min(history.rung, len(ladder) - 1)]

    def _turn(self, plan: FixPlan, item: Item, canon: Canon, history: ItemHistory) -> Outcome:
        n = next_iteration(self.journal)
        folder = self.dir / "iterations" / str(n)
        scratch = self.dir / "tmp" / f"iteration-{n}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        canon_dir = self._canon_snapshot(canon)
        checkpoint = self.code.head()
        assert checkpoint is not None
        refs = self.code.ref_state()
        sensors = self._sensors(item, canon, canon_dir)
        before = self._checkpoint_reading(checkpoint, sensors, canon_dir, scratch)
        rung = self._rung(history)
        base = {"n": n, "item": item.id, "plan_pass": plan.pass_seq, "canon_version": canon.version}
        if not before.failing:
            self.journal.append("iteration.started", {**base, "checkpoint": checkpoint, "refs": _refs_json(refs),
                                                      "agent": None})
            self.journal.append("iteration.ended", {**base, "decision": "already_green",
                                                    "reason": "every sensor is green at the checkpoint; nothing to improve"})
            return Outcome("already_green", f"iteration {n}: {item.id} is already green here; left for plan to re-measure",
                           n, item.id)
        prompt = render(
            self.ws, item=item, canon_version=canon.version, iteration=n,
            canon_slice=canon.slice(item.requirements), negative_knowledge=history.negative[-5:],
            feedback=before.excerpts, context=self._context(scratch),
        )
        folder.mkdir(parents=True, exist_ok=True)
        prompt_file = folder / "prompt.md"
        write_text(prompt_file, prompt)
        preset = None if self.options.agent_command else self.ws.config.agents.get(rung)
        lease = route = None
        if preset is not None and preset.provider:
            allowance = self._allowance(item, canon)
            why, source = _exhausted(allowance)
            if why:
                shutil.rmtree(scratch, ignore_errors=True)
                return self._budget_spent(item, canon, history, why, source)
            assert self.gateway is not None
            lease = self.gateway.open_turn(preset.provider, upstream_model=preset.upstream_model, allowance=allowance,
                                           log=folder / "calls.jsonl")
            route = agents.ModelRoute(lease.url, lease.token, self.ws.config.gateway.providers[preset.provider].wire)
        try:
            invocation = agents.invocation(self.ws.config, rung, prompt_file, override=self.options.agent_command,
                                           route=route)
        except Exception:
            if lease is not None and self.gateway is not None:
                self.gateway.close(lease)
            raise
        self.journal.append("iteration.started", {**base, "checkpoint": checkpoint, "refs": _refs_json(refs),
                                                  "agent": invocation.label, "rung": rung,
                                                  "failing_before": before.failing})
        outcome = self._decide(n, item, canon, plan, checkpoint, refs, before, sensors, canon_dir, scratch, folder,
                               invocation, rung, prompt, history, lease)
        shutil.rmtree(scratch, ignore_errors=True)
        return outcome

    # the gateway's budgets ------------------------------------------------------------------------
    def _item_spent(self, item_id: str, canon_version: int) -> tuple[int, float]:
        rows = [r.data for r in self.journal.rows("model.call")
                if r.data.get("item") == item_id and r.data.get("canon_version") == canon_version]
        tokens = sum(int(r.get("input_tokens", 0)) + int(r.get("output_tokens", 0)) + int(r.get("cache_read_tokens", 0))
                     + int(r.get("cache_write_tokens", 0)) for r in rows)
        return tokens, sum(float(r.get("cost_usd") or 0.0) for r in rows)

    def _allowance(self, item: Item, canon: Canon) -> Allowance:
        """The tightest of the turn's, the item's (at this canon version) and the run's budgets."""
        gateway = self.ws.config.gateway
        item_tokens, item_cost = self._item_spent(item.id, canon.version) if (
            gateway.max_item_tokens or gateway.max_item_cost_usd) else (0, 0.0)
        tokens = [(limit - spent, source) for limit, spent, source in (
            (gateway.max_turn_tokens, 0, "turn"), (gateway.max_item_tokens, item_tokens, "item"),
            (gateway.max_run_tokens, self.run_tokens, "run")) if limit]
        costs = [(limit - spent, source) for limit, spent, source in (
            (gateway.max_turn_cost_usd, 0.0, "turn"), (gateway.max_item_cost_usd, item_cost, "item"),
            (gateway.max_run_cost_usd, self.run_cost, "run")) if limit]
        token_limit, token_source = min(tokens) if tokens else (None, "")
        cost_limit, cost_source = min(costs) if costs else (None, "")
        return Allowance(token_limit, cost_limit, token_source, cost_source)

    def _budget_spent(self, item: Item, canon: Canon, history: ItemHistory, why: str, source: str) -> Outcome:
        """No turn starts on a spent budget: the item's blocks the item, the run's stops the run."""
        if source == "item":
            self.journal.append(BLOCKED, {"item": item.id, "canon_version": canon.version, "attempts": history.attempts,
                                          "evidence": {"reason": why, "failing": None, "excerpt": "", "iteration": None}})
            return Outcome("blocked", f"{item.id}: blocked: {why}", None, item.id)
        return Outcome("budget_exhausted", f"build-loop: {why}", None, item.id)

    def _journal_calls(self, n: int, item: Item, canon: Canon, lease: Lease) -> None:
        for call in lease.calls:
            self.journal.append("model.call", {"n": n, "item": item.id, "canon_version": canon.version, **call.as_json()})
        self.run_tokens += lease.tokens
        self.run_cost += lease.cost_usd or 0.0

    def _context(self, scratch: Path) -> list[dict[str, str]]:
        """Context commands read the work tree the agent wrote: they run sandboxed like the agent, read-only on it."""
        out = []
        env = {key: os.environ[key] for key in self.ws.config.build.env_allow if key in os.environ}
        env.update({"TMPDIR": str(scratch), "PYTHONDONTWRITEBYTECODE": "1"})
        for command in self.ws.config.build.context_commands:
            argv = sandbox_argv(self.ws, ("/bin/sh", "-c", command), [scratch])
            result = run(Request(argv, cwd=self.ws.code, env=env, timeout=60, limits=self._limits()),
                         reap_orphans=self.subreaper)
            out.append({"command": command, "output": "\n".join((result.stdout + result.stderr).splitlines()[-80:])})
        return out

    def _agent_env(self, n: int, item: Item, prompt_file: Path, scratch: Path) -> dict[str, str]:
        env = {key: os.environ[key] for key in self.ws.config.build.env_allow if key in os.environ}
        env.update({"BANACH_PROMPT_FILE": str(prompt_file), "BANACH_ITEM": item.id, "BANACH_ITERATION": str(n),
                    "TMPDIR": str(scratch)})
        return env

    def _limits(self) -> Limits:
        build = self.ws.config.build
        return Limits(max_processes=build.max_processes, memory_bytes=build.max_memory_bytes,
                      file_bytes=build.max_file_bytes, output_bytes=build.max_output_bytes)

    def _fence(self, checkpoint: str, item: Item) -> FenceReport:
        build = self.ws.config.build
        return fence(self.code, checkpoint, item.scope, protected_patterns(self.ws),
                     FenceLimits(build.max_file_bytes, build.max_changed_paths))

    def _decide(self, n: int, item: Item, canon: Canon, plan: FixPlan, checkpoint: str, refs: RefState,
                before: Reading, sensors: list[Sensor], canon_dir: Path, scratch: Path, folder: Path,
                invocation: agents.Invocation, rung: str, prompt: str, history: ItemHistory,
                lease: Lease | None = None) -> Outcome:
        build = self.ws.config.build
        base: dict[str, Any] = {"n": n, "item": item.id, "plan_pass": plan.pass_seq, "canon_version": canon.version,
                                "kind": item.kind, "area": item.area, "failing_before": before.failing,
                                "agent": invocation.label}
        agent_prompt = folder / "prompt.md"
        turn_scratch = scratch / "agent"
        turn_scratch.mkdir()
        relay = None
        if lease is not None and self.gateway is not None and self.ws.config.gateway.network == "gateway-only":
            relay = (self.gateway.socket_path, self.gateway.port)  # the agent's one way out: 127.0.0.1:port, relayed
        argv = sandbox_argv(self.ws, invocation.argv, [self.ws.code, turn_scratch, *invocation.state_paths],
                            gateway_relay=relay)
        timeout = self.options.turn_timeout or build.turn_timeout
        env = {**self._agent_env(n, item, agent_prompt, turn_scratch), **agents.preset_env(invocation, turn_scratch)}
        control = self.code.control_files()
        try:
            turn = run(Request(argv, cwd=self.ws.code, env=env, stdin=prompt, timeout=timeout, limits=self._limits()),
                       reap_orphans=self.subreaper, cancel=self.cancel, halt=lease.halt if lease else None)
        finally:
            if lease is not None and self.gateway is not None:
                self.gateway.close(lease)
        write_text(folder / "output.txt", turn.stdout + ("\n--- stderr ---\n" + turn.stderr if turn.stderr.strip() else ""))
        preset_name = "" if self.options.agent_command else rung
        report = agents.read_turn(self.ws.config, preset_name, turn.stdout, turn.stderr, turn.returncode, now=time.time())
        turn_facts: dict[str, Any] = {
            "exit_code": turn.returncode, "timed_out": turn.timed_out, "duration": round(turn.duration, 3),
            "reaped": turn.reaped, "cost_usd": report.cost_usd, "claimed_success": report.claimed_success,
            "capped": turn.capped}
        if lease is not None:
            self._journal_calls(n, item, canon, lease)
            model_calls = [c for c in lease.calls if c.model_call]
            turn_facts.update({"cost_usd": lease.cost_usd, "model_calls": len(model_calls), "tokens": lease.tokens,
                               "gateway_stop": lease.stop_reason or None})
            if lease.stop_reason == "budget":
                turn_facts["budget_stop"] = lease.stop_message

        def end(decision: str, reason: str, **extra: Any) -> Outcome:
            if turn_facts.get("budget_stop"):
                reason = f"{reason} (the gateway stopped the turn: {turn_facts['budget_stop']})"
            record = {**base, **turn_facts, "decision": decision, "reason": reason, **extra}
            self.journal.append("iteration.ended", record)
            write_json(folder / "result.json", record)
            return Outcome(decision, f"iteration {n} ({item.id}): {decision}: {reason}", n, item.id,
                           extra.get("commit"), turn_facts["cost_usd"], extra.get("resets_at"), record)

        refs_checked = False  # once the guards have compared (and restored) the refs, a roll-back need not again

        def roll_back() -> None:
            self.code.restore_control_files(control)
            if not refs_checked:
                self.code.restore_refs(refs)
            self.code.rollback(checkpoint)

        if turn.cancelled:
            roll_back()
            return end("abandoned", "build-loop was asked to stop during the turn; rolled back")
        if lease is not None and lease.stop_reason == "rate_limited":
            roll_back()
            return end("rate_limited", f"the gateway ended the turn: {lease.stop_message}; neither progress nor failure",
                       resets_at=lease.resets_at)
        if report.rate_limited:
            roll_back()
            return end("rate_limited", "the agent hit a usage or rate limit: neither progress nor failure",
                       resets_at=report.resets_at)
        tampered = self.code.restore_control_files(control)
        violations = _guard_violations(refs, self.code.ref_state()) + [f"the git directory's {name} changed" for name in tampered]
        if violations:
            self.code.restore_refs(refs)
        refs_checked = True
        fenced = self._fence(checkpoint, item)
        if not fenced.capped:
            for command in build.fix_commands:
                run(Request(sandbox_argv(self.ws, ("/bin/sh", "-c", command), [self.ws.code, scratch]), cwd=self.ws.code,
                            env=self._sensor_env(canon_dir, scratch), timeout=120, limits=self._limits()),
                    reap_orphans=self.subreaper)
            if build.fix_commands:
                fenced = fenced.merge(self._fence(checkpoint, item))
        guard_facts = {"guard_violations": violations, "reverted": list(fenced.reverted), "hostile": list(fenced.hostile),
                       "ignored_removed": list(fenced.ignored),
                       "scope_fighting": bool(fenced.reverted or fenced.hostile)}
        if fenced.reverted or fenced.hostile:
            self.journal.append("scope.fighting", {"n": n, "item": item.id, "reverted": list(fenced.reverted),
                                                   "hostile": list(fenced.hostile)})
        capped = fenced.capped or turn.capped
        if capped:
            roll_back()
            outcome = end("rollback", f"capped: {capped}; the whole turn was rolled back", **guard_facts, changed=[],
                          feedback=before.excerpts)
            self._after_failure(item, canon, history, outcome)
            return outcome
        entries = snapshot(self.code, fenced.kept)
        changed = sorted(entries)
        if not changed and turn.returncode != 0 and not turn.timed_out and not turn.halted:
            roll_back()  # the agent did not run (missing, misconfigured, refused): not an attempt on the item
            tail = "\n".join(turn.stderr.strip().splitlines()[-15:])
            first = tail.splitlines()[-1] if tail else "no output on stderr"
            return end("agent_failed", f"the agent exited with code {turn.returncode} and changed nothing: {first}",
                       **guard_facts, changed=[], stderr_tail=tail, agent_setup=self.agent_setup)
        if not changed:
            roll_back()
            outcome = end("stall", "the turn left no change in scope" + (" (timed out)" if turn.timed_out else ""),
                          **guard_facts, changed=[], feedback=before.excerpts)
            self._after_failure(item, canon, history, outcome)
            return outcome
        after = self._read(sensors, canon_dir, scratch)
        broke = regressions(before, after)
        better = len(after.failing) < len(before.failing) or (
            len(after.failing) == len(before.failing) and after.score > before.score)
        facts = {**guard_facts, "changed": changed, "failing_after": after.failing, "regressions": broke,
                 "score_before": before.score, "score_after": after.score, "fingerprint": after.fingerprint}
        if broke or not better:
            roll_back()
            if broke:
                reason = f"the ratchet: {len(broke)} check(s) that were green went red ({', '.join(broke[:5])})"
            elif after.fingerprint == before.fingerprint:
                reason = f"no progress: the same {len(after.failing)} check(s) still fail"
            else:
                reason = f"no progress: {len(after.failing)} failing after, {len(before.failing)} before"
            excerpt = "\n".join(text for text in after.excerpts.values())[-3000:]
            outcome = end("rollback", reason, **facts, excerpt=excerpt, feedback=after.excerpts)
            self._after_failure(item, canon, history, outcome)
            return outcome
        commit = self._keep(n, item, canon, checkpoint, entries, before, after)
        write_json(self.dir / "readings" / "last-kept.json", {"commit": commit, **after.as_json()})
        return end("keep", f"failing {len(before.failing)} -> {len(after.failing)}", **facts, commit=commit)

    def _keep(self, n: int, item: Item, canon: Canon, checkpoint: str, entries: dict[str, Entry | None],
              before: Reading, after: Reading) -> str:
        """Commit exactly the blobs the fence kept (nothing written since), journal the intent, then publish."""
        commit, tree = self.code.commit_entries(
            checkpoint, entries,
            f"{item.kind} {item.id}: {item.title}\n\n"
            f"Kept by the governor: failing {len(before.failing)} -> {len(after.failing)}.",
            {trailers.ITEM: item.id, trailers.CANON_VERSION: str(canon.version), trailers.ITERATION: str(n)}, role="build")
        self.journal.append("iteration.committing", {"n": n, "item": item.id, "commit": commit, "tree": tree,
                                                     "parent": checkpoint})
        self.code.publish(commit, checkpoint)
        return commit

    def _after_failure(self, item: Item, canon: Canon, history: ItemHistory, outcome: Outcome) -> None:
        build = self.ws.config.build
        ladder = build.rungs
        attempts, streak = history.attempts + 1, history.streak + 1
        if attempts >= build.max_attempts:
            self.journal.append(BLOCKED, {
                "item": item.id, "canon_version": canon.version, "attempts": attempts,
                "evidence": {"reason": outcome.details.get("reason"), "failing": outcome.details.get("failing_after",
                                                                                                   outcome.details.get("failing_before")),
                             "excerpt": outcome.details.get("excerpt", "")[-2000:], "iteration": outcome.n},
            })
        elif streak >= build.stall_patience and history.rung + 1 < len(ladder):
            self.journal.append("ladder.climb", {"item": item.id, "from": history.rung, "to": history.rung + 1,
                                                 "from_agent": ladder[history.rung], "to_agent": ladder[history.rung + 1],
                                                 "after": streak, "n": outcome.n})


def _exhausted(allowance: Allowance) -> tuple[str, str]:
    """(why no turn may start, whose budget it is: turn, item or run), or ("", "")."""
    if allowance.tokens is not None and allowance.tokens <= 0:
        return f"the {allowance.tokens_from} token budget at the gateway is spent", allowance.tokens_from
    if allowance.cost_usd is not None and allowance.cost_usd <= 0:
        return f"the {allowance.cost_from} cost budget at the gateway is spent", allowance.cost_from
    return "", ""


def _refs_json(refs: RefState) -> dict[str, Any]:
    return {"head_symbolic": refs.head_symbolic, "head": refs.head, "refs": [list(r) for r in refs.refs],
            "hidden": list(refs.hidden)}


def _guard_violations(before: RefState, after: RefState) -> list[str]:
    found = []
    if after.head != before.head:
        found.append(f"HEAD moved {before.head[:12]} -> {after.head[:12]} (commit or reset)")
    if after.head_symbolic != before.head_symbolic:
        found.append(f"HEAD switched {before.head_symbolic or 'detached'} -> {after.head_symbolic or 'detached'} (checkout)")
    old, new = dict(before.refs), dict(after.refs)
    for ref in sorted(set(old) | set(new)):
        if old.get(ref) != new.get(ref):
            what = "stash" if ref == "refs/stash" else ref
            found.append(f"{what} {'created' if ref not in old else 'deleted' if ref not in new else 'moved'}")
    for path in sorted(set(after.hidden) - set(before.hidden)):
        found.append(f"index flag hides {path} (skip-worktree or assume-unchanged)")
    return found
