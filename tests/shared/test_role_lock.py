"""One process per role and workspace (shared/role_lock.py): real loops, real kernel locks, real kills."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shared.role_lock import holder, lock_path
from shared.workspace import Workspace
from tests.helpers.processes import alive, wait_gone
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import agent, cli, example, start, stop

# the role's loop, and every one-shot command of that role: each takes the role's lock
ONE_SHOTS = {"spec": [("spec-loop", "once")], "plan": [("plan-loop", "once"), ("plan-loop", "certify")],
             "build": [("build-loop", "once", "--agent-command", agent("no_change.py"))]}


def held_by(ws: Workspace, role: str, pid: int) -> bool:
    found = holder(ws, role)
    return found is not None and found.pid == pid and bool(found.command)


@pytest.mark.parametrize("role", ["spec", "plan", "build"])
def test_a_second_instance_refuses_at_once_naming_the_holders_pid(tmp_path: Path, role: str) -> None:
    ws = example(tmp_path)
    program = f"{role}-loop"
    first = start(program, ws, "run", log=tmp_path / "first.log")
    try:
        assert wait_until(lambda: held_by(ws, role, first.pid), [ws.role_dir(role)], 30), \
            (tmp_path / "first.log").read_text()
        assert holder(ws, role).command == f"{program} run"  # type: ignore[union-attr]
        for command in [(program, "run"), *ONE_SHOTS[role]]:
            began = time.monotonic()
            refused = cli(command[0], *command[1:], "--workspace", str(ws.root), timeout=30)
            took = time.monotonic() - began
            assert refused.returncode == 1, (command, refused.stdout, refused.stderr)
            assert (f"{' '.join(command[:2])} cannot start: {role} already runs in the workspace {ws.root}: "
                    f"{program} run (pid {first.pid}") in refused.stderr, refused.stderr
            assert took < 10, f"{command} took {took:.1f}s to refuse"
        assert alive(first.pid) and held_by(ws, role, first.pid)
    finally:
        assert stop(first) == 0, (tmp_path / "first.log").read_text()
    assert holder(ws, role) is None  # released with the process


def test_the_kernel_releases_the_lock_of_a_killed_loop_and_a_person_edits_canon_meanwhile(tmp_path: Path) -> None:
    ws = example(tmp_path)
    loop = start("spec-loop", ws, "run", log=tmp_path / "spec.log")
    try:
        assert wait_until(lambda: held_by(ws, "spec", loop.pid), [ws.role_dir("spec")], 30)
        # a person's change is not the loop's work: it lands beside the running loop (spec's canon lock orders them)
        added = cli("spec-loop", "add", "--name", "extras.md", "--workspace", str(ws.root), "--",
                    "## EX-1: a note\npaths: textkit/note.py\n\nProse only.\n")
        assert added.returncode == 0, added.stdout + added.stderr
        os.kill(loop.pid, signal.SIGKILL)
        loop.wait(timeout=30)
    finally:
        stop(loop)
    assert holder(ws, "spec") is None
    assert lock_path(ws, "spec").read_text().startswith(f'{{"pid": {loop.pid}')  # the dead holder's line describes nobody
    again = cli("spec-loop", "once", "--workspace", str(ws.root))
    assert again.returncode == 0 and "inbox is empty" in again.stdout, again.stderr


HOLDER = """
import os, subprocess, sys, time
from shared.role_lock import claim
from shared.workspace import Workspace
claim(Workspace.open(sys.argv[1]), "build", "build-loop run")
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # fork and exec, as every child
forked = os.fork()
if forked == 0:  # a fork that never execs keeps every descriptor of the parent's
    time.sleep(600)
    os._exit(0)
print(child.pid, forked, flush=True)
time.sleep(600)
"""


def test_what_a_loop_starts_never_holds_its_lock(tmp_path: Path) -> None:
    """A POSIX record lock belongs to the process that took it: not to its children, whether or not they exec, so no
    agent, sensor or check outlives the loop holding its role."""
    ws = example(tmp_path)
    parent = subprocess.Popen([sys.executable, "-c", HOLDER, str(ws.root)], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[2])
    assert parent.stdout is not None
    children = [int(pid) for pid in parent.stdout.readline().split()]
    try:
        assert holder(ws, "build").pid == parent.pid  # type: ignore[union-attr]
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
        assert all(alive(pid) for pid in children)
        assert holder(ws, "build") is None
    finally:
        for pid in children:
            os.kill(pid, signal.SIGKILL)
            wait_gone(pid)
        parent.stdout.close()
