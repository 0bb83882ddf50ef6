"""What a person can do from the dashboard, each done by the executable whose job it is, and journaled with who asked.

The dashboard writes no store of the loops: unblocking and resuming are `build-loop` commands (build's journal),
a canon edit is `spec-loop edit --text-from -` (spec-loop validates, dry-runs and commits, or refuses with file:line),
a fresh plan pass is `plan-loop once` (a supervised plan-loop is stopped meanwhile); pausing and restarting go
through the supervisor.
Its own journal (state/serve/journal.db, hash-chained) records each request: what, from where, and what came of it."""
from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.app import supervisor
from shared.app.journal_read import journal_file
from shared.journal import Journal
from shared.workspace import LOOP_ROLES, Workspace

ACTION_TIMEOUT = 600.0


@dataclass(frozen=True)
class Result:
    ok: bool
    message: str


def journal_path(ws: Workspace) -> Path:
    return journal_file(ws, "dashboard")  # `banach journal show dashboard` reads it


def _run(ws: Workspace, role: str, *args: str, operands: tuple[str, ...] = (), stdin: str | None = None) -> Result:
    """The role's own executable; what the page sent goes after '--', so it is never read as an option."""
    command = [sys.executable, "-I", "-m", supervisor.EXECUTABLES[role], *args, "--workspace", str(ws.root), "--", *operands]
    try:
        ran = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=ACTION_TIMEOUT,
                             cwd=ws.root)
    except subprocess.TimeoutExpired:
        return Result(False, f"{role}-loop {' '.join(args)} did not finish within {ACTION_TIMEOUT:g}s")
    output = (ran.stdout + ran.stderr).strip()
    return Result(ran.returncode == 0, output or f"{role}-loop {' '.join(args)} exited with {ran.returncode}")


def unblock(ws: Workspace, item: str) -> Result:
    return _run(ws, "build", "unblock", operands=(item,) if item else ())


def pause_build(ws: Workspace) -> Result:
    if not supervisor.running(ws):
        return Result(False, "build is not running under the supervisor here (banach up starts it); nothing to pause")
    supervisor.stop_program(ws, "build")
    return Result(True, "build is stopped: a turn in flight ended as interrupted and was rolled back; resume starts it")


def resume_build(ws: Workspace) -> Result:
    lifted = _run(ws, "build", "resume")
    if not supervisor.running(ws):
        return Result(lifted.ok, lifted.message + " (build is not supervised here: start it with banach up)")
    supervisor.start_program(ws, "build")
    return Result(lifted.ok, lifted.message + "; build is running")


def restart(ws: Workspace, role: str) -> Result:
    if role not in LOOP_ROLES:
        return Result(False, f"no loop named {role!r}: one of {', '.join(LOOP_ROLES)}")
    if not supervisor.running(ws):
        return Result(False, "nothing is supervised here (banach up starts the loops); nothing to restart")
    supervisor.stop_program(ws, role)
    supervisor.start_program(ws, role)
    return Result(True, f"{role} restarted")


def plan_pass(ws: Workspace) -> Result:
    """`plan-loop once`: a pass from scratch now, even when the last one still describes (V, C). A workspace runs one
    plan process at a time (shared/role_lock.py): a supervised plan-loop is stopped for the pass (it finishes the
    pass it is in) and started again after; one running outside the supervisor makes `plan-loop once` refuse, naming
    it."""
    supervised = any(p.role == "plan" and p.state == "RUNNING" for p in supervisor.states(ws))
    if supervised:
        supervisor.stop_program(ws, "plan")
    try:
        return _run(ws, "plan", "once")
    finally:
        if supervised:
            supervisor.start_program(ws, "plan")


def save_document(ws: Workspace, document: str, text: str) -> Result:
    return _run(ws, "spec", "edit", "--text-from", "-", operands=(document,), stdin=text)


def record(ws: Workspace, action: str, target: str, who: dict[str, Any], result: Result) -> None:
    with Journal(journal_path(ws)) as journal:
        journal.append("dashboard.action", {"action": action, "target": target, "by": who, "ok": result.ok,
                                            "message": result.message[-4000:], "at": time.time()})
