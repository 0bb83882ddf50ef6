"""The loops of a workspace found by their locks (shared/app/loops.py) and their runs' record (shared/app/runs.py):
what banach status, down and up do with loops no supervisord started. The real supervisord is in
tests/shared/test_supervisor.py."""
from __future__ import annotations

import json
import os
import secrets
import signal
from pathlib import Path
from typing import Any

import pytest

from shared.app import supervisor
from shared.errors import JournalError
from shared.journal import Journal
from shared.role_lock import holder, lock_path
from shared.workspace import Workspace
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import agent, cli, example, start, stop


def status(ws: Workspace) -> dict[str, Any]:
    result = cli("banach", "status", "--json", "--workspace", str(ws.root))
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def held_by(ws: Workspace, role: str, pid: int) -> bool:
    found = holder(ws, role)
    return found is not None and found.pid == pid and bool(found.command)


def runs_started(ws: Workspace, role: str) -> int:
    """loop.started rows: a run is on the record once its loop has journaled its start (after it took its lock)."""
    try:
        with Journal(ws.journal_path(role), readonly=True) as journal:  # type: ignore[arg-type]
            return journal.count("loop.started")
    except JournalError:  # not made yet, or being made
        return 0


def test_status_tells_a_loops_restarts_and_when_and_how_it_last_ended(tmp_path: Path) -> None:
    ws = example(tmp_path)
    log = tmp_path / "spec.log"
    first = start("spec-loop", ws, "run", log=log)
    try:
        assert wait_until(lambda: held_by(ws, "spec", first.pid) and runs_started(ws, "spec") == 1,
                          [ws.role_dir("spec")], 30)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        stop(first)
    spec = status(ws)["loops"]["spec"]
    assert spec["running"] is None and spec["starts"] == 1 and spec["restarts"] == 0
    assert spec["last_end"]["how"].startswith("killed or crashed") and not spec["last_end"]["clean"]

    second = start("spec-loop", ws, "run", log=log)
    try:
        assert wait_until(lambda: held_by(ws, "spec", second.pid) and runs_started(ws, "spec") == 2,
                          [ws.role_dir("spec")], 30)
        info = status(ws)
        spec = info["loops"]["spec"]
        assert spec["running"]["pid"] == second.pid and spec["running"]["under"] == "outside"
        assert info["outside"] == ["spec"]
        assert spec["starts"] == 2 and spec["restarts"] == 1  # it came back after a kill
        assert spec["last_end"]["before"] is not None  # the kill's time: before the next start
        text = cli("banach", "status", "--workspace", str(ws.root)).stdout
        assert f"OUTSIDE     spec-loop run (pid {second.pid}) runs outside the supervisor" in text, text
        assert "  spec      2 runs, 1 restart; last ended before " in text and "(when it started again), killed or " \
            "crashed (SIGKILL, an OOM kill, a power cut: no clean stop was journaled)" in text, text
        down = cli("banach", "down", "--workspace", str(ws.root))
        assert down.returncode == 0, down.stderr
        assert f"stopped spec-loop run (pid {second.pid}" in down.stdout and "(stopped)" in down.stdout, down.stdout
        assert second.wait(timeout=5) == 0
    finally:
        stop(second)
    spec = status(ws)["loops"]["spec"]
    assert spec["running"] is None and spec["restarts"] == 1
    assert spec["last_end"]["how"] == "stopped cleanly on SIGTERM" and spec["last_end"]["clean"]
    assert "nothing of the workspace was running" in cli("banach", "down", "--workspace", str(ws.root)).stdout


def test_up_refuses_while_a_one_shot_command_runs_and_down_stops_it(measured: Workspace, tmp_path: Path) -> None:
    ws = measured
    once = start("build-loop", ws, "once", "--agent-command", agent("never_returns.py"), log=tmp_path / "build.log")
    try:
        assert wait_until(lambda: held_by(ws, "build", once.pid), [ws.role_dir("build")], 30)
        up = cli("banach", "up", "--workspace", str(ws.root))
        assert up.returncode == 1
        assert (f"build-loop once (pid {once.pid}, since" in up.stderr
                and "'banach up' starts the loops once it has ended" in up.stderr), up.stderr
        assert not supervisor.running(ws)  # nothing was started
        run = cli("banach", "run", "--until-certified", "--workspace", str(ws.root))
        assert run.returncode == 1 and f"build-loop once (pid {once.pid}" in run.stdout, run.stdout
        assert f"build-loop once (pid {once.pid}) runs outside the supervisor" in \
            cli("banach", "status", "--workspace", str(ws.root)).stdout
        down = cli("banach", "down", "--workspace", str(ws.root))
        assert down.returncode == 0 and f"stopped build-loop once (pid {once.pid}" in down.stdout, down.stdout
        assert once.wait(timeout=5) == 128 + signal.SIGTERM  # its turn stopped, rolled back and journaled
    finally:
        stop(once)
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        assert journal.last("iteration.ended").data["decision"] in ("abandoned", "interrupted")  # type: ignore[union-attr]


def test_the_systemd_units_run_the_command_that_takes_the_lock(tmp_path: Path) -> None:
    ws = example(tmp_path)
    written = cli("banach", "export", "systemd", "-o", str(tmp_path / "units"), "--workspace", str(ws.root))
    assert written.returncode == 0, written.stderr
    for role, module in supervisor.EXECUTABLES.items():
        unit = (tmp_path / "units" / f"banach-{role}.service").read_text()
        assert f" -m {module} run --workspace {ws.root}\n" in unit
        assert str(lock_path(ws, role)) in unit
        assert str(ws.role_dir(role)) in unit.split("ReadWritePaths=")[1].split()  # where its lock is written
        assert "KillMode=mixed\n" in unit


def _unit_cgroup(name: str) -> Path:
    """A cgroup named like a systemd unit, in a hierarchy this (root) process may write."""
    from shared.cgroups import _mounts

    for key in ("v2", "pids", "freezer"):
        point = _mounts().get(key, (None, ""))[0]
        if point is None:
            continue
        folder = point / f"banach-test-{secrets.token_hex(4)}" / name
        try:
            folder.mkdir(parents=True)
        except OSError:
            continue
        return folder
    pytest.skip("no cgroup hierarchy to make a unit's cgroup in")


@pytest.mark.root
def test_a_loop_in_a_systemd_unit_is_named_and_left_to_systemctl(tmp_path: Path) -> None:
    """A loop in the cgroup of a unit `banach export systemd` writes (named as systemd names it, made by hand here:
    the test machine runs no systemd) is systemd's: status says so, up starts no second set, down leaves it."""
    ws = example(tmp_path)
    unit = _unit_cgroup("banach-spec.service")
    loop = start("spec-loop", ws, "run", log=tmp_path / "spec.log")
    try:
        (unit / "cgroup.procs").write_text(str(loop.pid))
        assert wait_until(lambda: held_by(ws, "spec", loop.pid), [ws.role_dir("spec")], 30)
        info = status(ws)
        assert info["loops"]["spec"]["running"]["under"] == "systemd unit banach-spec.service" and not info["outside"]
        assert f"  spec      running under systemd unit banach-spec.service (pid {loop.pid})" in \
            cli("banach", "status", "--workspace", str(ws.root)).stdout
        up = cli("banach", "up", "--workspace", str(ws.root))
        assert up.returncode == 1 and "systemctl stop banach-spec.service" in up.stderr, up.stderr
        assert not supervisor.running(ws)
        down = cli("banach", "down", "--workspace", str(ws.root))
        assert down.returncode == 1 and "left running under systemd: spec-loop run" in down.stderr, down.stderr
        assert loop.poll() is None and held_by(ws, "spec", loop.pid)
    finally:
        stop(loop)
        unit.rmdir()
        unit.parent.rmdir()
