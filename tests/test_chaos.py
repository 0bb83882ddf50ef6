"""Chaos: 100 SIGKILLs at random moments during a demo run under supervisord: of a loop's main process, of a child of
build (the agent, a sensor: what runs in a turn's cgroup), of supervisord alone, and of the whole tree at once (a power
cut), each of the last two followed by `banach up`. After every `up`, one loop per role, by the locks and by /proc. The
run still certifies, every journal verifies, fix_plan parses, the code holds only kept commits, no iteration is left
open, and after `banach down` no process has the workspace as its folder."""
from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

import pytest

from shared.app import supervisor
from shared.app.status import status
from shared.contracts import fix_plan as fix_plan_file
from shared.journal import Journal
from shared.role_lock import holder
from shared.workspace import LOOP_ROLES, Workspace
from tests.helpers.processes import describe, in_folder, kill_tree, live_descendants, run_cgroups
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import cli, example, git

pytestmark = pytest.mark.slow
KILLS = 100
KINDS = ["loop"] * 10 + ["child"] * 3 + ["supervisord"] * 3 + ["tree"] * 3  # weights


def journal_size(ws: Workspace, role: str) -> int:
    journal = Journal.reader(ws.journal_path(role))  # type: ignore[arg-type]
    if journal is None:
        return 0
    with journal:
        return len(journal.rows())


def held(ws: Workspace, role: str) -> int:
    found = holder(ws, role)
    return found.pid if found is not None else 0


def command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def one_set(ws: Workspace) -> bool:
    """By the locks and by /proc: one loop per role, supervisord's program."""
    supervised = {p.role: p.pid for p in supervisor.states(ws) if p.state == "RUNNING"}
    running = {pid: command_line(pid) for pid in in_folder(ws.root)}
    for role in LOOP_ROLES:
        wanted = f"\0-m\0{supervisor.EXECUTABLES[role]}\0run\0".encode()
        loops = [pid for pid, command in running.items() if wanted in command]
        if held(ws, role) != supervised.get(role) or loops != [held(ws, role)]:
            return False
    return True


def turn_processes(ws: Workspace) -> list[int]:
    """What runs in build's turn cgroups now: the agent, its sandbox, a sensor, a fix command."""
    build = held(ws, "build")
    found = []
    for pid in live_descendants(build) if build else []:
        try:
            if run_cgroups(Path(f"/proc/{pid}/cgroup").read_text()):
                found.append(pid)
        except OSError:
            continue
    return found


def test_a_hundred_random_kills_and_the_run_still_certifies_with_one_set_of_loops(tmp_path: Path) -> None:
    ws = example(tmp_path, backend="landlock")
    rng = random.Random(20261206)
    kills: list[str] = []
    certified = False
    folders = [ws.supervisor_dir, *(ws.role_dir(role) for role in LOOP_ROLES)]
    began = time.monotonic()
    supervisor.up(ws)
    try:
        while len(kills) < KILLS:
            # the four kinds, each at least once early on (a child of build in the first turn), then by weight
            kind = ["child", "supervisord", "tree", "loop"][len(kills)] if len(kills) < 4 else rng.choice(KINDS)
            role = rng.choice(["spec", "plan", "build", "build"])
            # a random moment: after 0 to 2 more rows of that role's journal, i.e. somewhere inside its step
            target = journal_size(ws, role) + rng.randint(0, 2)
            if not certified:
                wait_until(lambda role=role, target=target: journal_size(ws, role) >= target, [ws.role_dir(role)],
                           rng.uniform(0.2, 3.0))
                certified = bool(status(ws)["certified"])
            assert wait_until(lambda: one_set(ws), folders, 60), \
                f"after {kills[-1:]}: supervised {supervisor.states(ws)}; /proc {describe(in_folder(ws.root))}"
            if kind == "loop":
                pid = held(ws, role)
                os.kill(pid, signal.SIGKILL)
                kills.append(role)
                assert wait_until(lambda role=role, pid=pid: held(ws, role) not in (0, pid), folders, 60), \
                    f"{role} did not come back"
            elif kind == "child":
                if not kills:
                    assert wait_until(lambda: turn_processes(ws), [ws.role_dir("build")], 120), "no turn ran"
                children = turn_processes(ws)
                if not children:
                    continue  # no turn running at this moment: draw again
                os.kill(rng.choice(children), signal.SIGKILL)
                kills.append("child of build")
            else:
                supervisord = int((ws.supervisor_dir / "supervisord.pid").read_text())
                if kind == "supervisord":
                    os.kill(supervisord, signal.SIGKILL)
                else:
                    kill_tree(supervisord)
                kills.append(kind)
                supervisor.up(ws)  # at once: the loops of a supervisord killed alone may still be stopping
        assert wait_until(lambda: one_set(ws), folders, 60)
        assert wait_until(lambda: status(ws)["certified"], [ws.role_dir("plan"), ws.role_dir("build")], 300), \
            json.dumps(status(ws), default=str)
    finally:
        down = cli("banach", "down", "--workspace", str(ws.root))
    took = time.monotonic() - began
    assert down.returncode == 0, down.stderr
    assert not in_folder(ws.root), describe(in_folder(ws.root))
    assert len(kills) == KILLS
    assert cli("banach", "journal", "verify", "--receipts", "--workspace", str(ws.root)).returncode == 0
    assert fix_plan_file.read(ws.fix_plan_json) is not None
    assert git(ws.code, "status", "--porcelain") == ""
    subjects = git(ws.code, "log", "--format=%(trailers:key=Banach-Item,valueonly)", "HEAD~1..HEAD")
    assert subjects  # the last commit was kept by the governor
    for line in git(ws.code, "log", "--format=%H %an").splitlines()[:-1]:  # all but the initial commit
        assert line.endswith("banach-build")
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        started = {r.data["n"] for r in journal.rows("iteration.started")}
        ended = {r.data["n"] for r in journal.rows("iteration.ended")}
        interrupted = sum(r.data.get("decision") == "interrupted" for r in journal.rows("iteration.ended"))
    assert started == ended  # no iteration is left open
    counts = {what: kills.count(what) for what in sorted(set(kills))}
    assert counts["supervisord"] and counts["tree"] and counts["child of build"]
    info = status(ws)
    assert not info["outside"] and all(loop["running"] is None for loop in info["loops"].values())
    runs = {role: (loop["starts"], loop["restarts"]) for role, loop in info["loops"].items()}
    print(f"CHAOS {len(kills)} kills in {took:.0f}s: {counts}; build iterations interrupted and recovered: "
          f"{interrupted}; iterations: {len(started)}; plan passes: {info['plan_passes']}; (runs, restarts) by role "
          f"as status counts them: {runs}")
