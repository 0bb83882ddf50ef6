"""What failure leads to: after build.max_attempts failed attempts the item is blocked (with the evidence a person
needs to unblock it), after build.stall_patience in a row without progress the ladder climbs a rung, and after
AGENT_FAILURES_TO_PAUSE turns on more than one item whose agent could not run at all build pauses with what to fix (an
agent that fails on one item only counts against that item, like any failed attempt)."""
from __future__ import annotations

import hashlib
import json

from build_loop.history import ItemHistory
from build_loop.turn import Outcome
from canon.model import Canon
from shared.config import BuildConfig
from shared.contracts import cause
from shared.contracts.blocks import BLOCKED
from shared.contracts.fix_plan import Item
from shared.journal import Journal
from shared.workspace import Workspace


def escalate(journal: Journal, build: BuildConfig, item: Item, canon: Canon, history: ItemHistory, outcome: Outcome) -> None:
    ladder = build.rungs
    attempts, streak = history.attempts + 1, history.streak + 1
    if attempts >= build.max_attempts:
        failing = outcome.details.get("failing_after", outcome.details.get("failing_before"))
        # every attempt of this round left nothing to judge: another round on the top rung is a guess, not a plan
        changed_nothing = not history.round_changed and outcome.decision in ("stall", "agent_failed")
        journal.append(BLOCKED, {
            "item": item.id, "canon_version": canon.version, "attempts": attempts, "round": history.round,
            "rounds": build.rounds, "turns": history.turns + 1, "changed_nothing": changed_nothing,
            "evidence": {"reason": outcome.details.get("reason"), "failing": failing,
                         "cause": cause.from_excerpts(outcome.details.get("feedback"), failing),
                         "excerpt": (outcome.details.get("excerpt") or _excerpts(outcome))[-2000:],
                         "iteration": outcome.n},
        })
    elif streak >= build.stall_patience and history.rung + 1 < len(ladder):
        journal.append("ladder.climb", {"item": item.id, "from": history.rung, "to": history.rung + 1,
                                        "from_agent": ladder[history.rung], "to_agent": ladder[history.rung + 1],
                                        "after": streak, "n": outcome.n})


def _excerpts(outcome: Outcome) -> str:
    """The failing sensors' output the turn was shown (a stall or an agent failure has no excerpt of its own)."""
    feedback = outcome.details.get("feedback") or {}
    return "\n".join(f"{name}:\n{text}" for name, text in sorted(feedback.items())) or str(
        outcome.details.get("stderr_tail") or "")


AGENT_FAILURES_TO_PAUSE = 3
RESUMED = "build.resumed"  # a person said the agent is fixed: `build-loop resume`


def agent_setup(ws: Workspace, agent_command: str) -> str:
    """Which agent set-up a failure belongs to: a changed banach.toml or --agent-command gets a fresh try."""
    setup = {"command": agent_command, "build": ws.config.build.model_dump(mode="json"),
             "agents": {name: preset.model_dump(mode="json") for name, preset in ws.config.agents.items()}}
    return hashlib.sha256(json.dumps(setup, sort_keys=True).encode()).hexdigest()[:16]


def agent_broken(journal: Journal, agent_setup: str, canon_version: int) -> str:
    """When the agent failed to run on the last AGENT_FAILURES_TO_PAUSE turns of this run with this same set-up, trying
    again burns nothing but time: say what to fix instead ("" when it is not so), and journal the pause once, so that
    `banach status` shows it. A restart of build-loop (a new run) or a changed set-up gives the agent a fresh try."""
    marks = [row for row in (journal.last("loop.started"), journal.last(RESUMED)) if row is not None]
    since = max((row.seq for row in marks), default=0)
    recent = [row.data for row in journal.rows("iteration.ended", since=since)[-AGENT_FAILURES_TO_PAUSE:]]
    if len(recent) < AGENT_FAILURES_TO_PAUSE or any(
            r.get("decision") != "agent_failed" or r.get("agent_setup") != agent_setup for r in recent):
        return ""
    if len({r.get("item") for r in recent}) < 2:  # failing on one item only: it counts against that item (escalate)
        return ""
    last = recent[-1]
    tail = "\n    ".join(str(last.get("stderr_tail", "")).splitlines()[-8:]) or "(it printed nothing on stderr)"
    message = (f"PAUSED: the agent failed to run on the last {len(recent)} turns ({last.get('agent')}: exit code "
               f"{last.get('exit_code')}); its stderr ended with:\n    {tail}\n"
               "Fix the agent's command, installation, key or settings in banach.toml (banach doctor runs it), then "
               "resume: build-loop resume (or restart build-loop: banach ctl restart build).")
    said = journal.rows("paused", since=since)
    if not said or said[-1].data.get("message") != message:
        journal.append("paused", {"canon_version": canon_version, "message": message, "reason": "agent"})
    return message
