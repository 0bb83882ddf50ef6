"""build-loop run says what it waits for once, not at every poll: before plan's first pass (and what that pass
does), while it runs, and after certification. Each run polls dozens of times and ends itself on its time budget."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from plan_loop.passes import PlanService
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import cli, custom, example, git

POLLING = "idle_poll_seconds = 0.05\nmax_seconds = 1.5"  # about 30 polls, then the run stops itself


def run_idle(ws: Workspace) -> list[str]:
    """build-loop run until its time budget; the lines it printed, less the closing one."""
    result = cli("build-loop", "run", "--workspace", str(ws.root), timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines and "stopping cleanly: time budget" in lines[-1], result.stdout
    return lines[:-1]


def test_before_the_first_fix_plan_it_says_once_what_plan_is_doing(tmp_path: Path) -> None:
    ws = example(tmp_path)
    ws.config_file.write_text(ws.config_file.read_text().replace("idle_poll_seconds = 2", POLLING))
    lines = run_idle(ws)
    assert len(lines) == 1, lines
    assert "waiting for plan-loop's first pass" in lines[0]
    assert "every check and conformance test of canon v1" in lines[0] and "plan-loop once" in lines[0]


def test_while_plan_s_first_pass_runs_it_says_so_once(tmp_path: Path) -> None:
    hold, gate = tmp_path / "hold", tmp_path / "go"  # held only after intake, whose dry run runs the check once too
    ws = custom(tmp_path, f"## GO-1: waits for the test\npaths: go.py\nchecks:\n  - while [ -e {hold} ] && [ ! -e {gate} ]; "
                "do sleep 0.05; done\n\nHolds once the test lets it.\n", "no_change.py")
    hold.touch()
    ws.config_file.write_text(ws.config_file.read_text().replace('agent = "scripted"', f'agent = "scripted"\n{POLLING}', 1))
    plan = subprocess.Popen([sys.executable, "-m", "plan_loop", "once", "--workspace", str(ws.root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def pass_started() -> bool:
            journal = Journal.reader(ws.journal_path("plan"))
            if journal is None:
                return False
            with journal:
                return journal.last("pass.started") is not None

        assert wait_until(pass_started, [ws.role_dir("plan")], 60)
        lines = run_idle(Workspace.open(ws.root))
    finally:
        gate.touch()
        out, err = plan.communicate(timeout=60)
    assert plan.returncode == 0, err
    assert "plan pass 1" in out
    assert len(lines) == 1, lines
    assert "plan-loop's first pass is running" in lines[0] and "canon v1" in lines[0]


def test_after_certification_it_says_once_that_nothing_is_open(measured: Workspace) -> None:
    from build_loop.sim_agent import reference_root

    for rid in ("TK-1", "TK-2", "TK-3", "TK-4", "TK-5"):
        source = reference_root() / rid / "right"
        for path in source.rglob("*.py"):
            (measured.code / path.relative_to(source)).write_text(path.read_text())
    git(measured.code, "add", "-A")
    git(measured.code, "commit", "-qm", "everything")
    service = PlanService(measured)
    try:
        assert [r.certified for r in service.measure()] == [False, True]
    finally:
        service.close()
    measured.config_file.write_text(measured.config_file.read_text().replace("idle_poll_seconds = 2", POLLING))
    lines = run_idle(measured)
    assert len(lines) == 1, lines
    assert "nothing open" in lines[0]
