"""A supervised program ends with its supervisor (shared/lifeline.py), here with a stand-in parent; the real
supervisord is in tests/shared/test_supervisor.py."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from shared.journal import Journal
from shared.lifeline import SUPERVISOR_GONE
from shared.role_lock import holder
from shared.workspace import Workspace
from tests.helpers.processes import wait_gone
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import example

ROOT = Path(__file__).resolve().parents[2]

# The parent stands for supervisord: it writes its pid where supervisord does, starts the loop with the variable
# supervisord sets, prints the loop's pid, and waits to be killed.
PARENT = """
import os, subprocess, sys, time
from pathlib import Path
folder = Path(sys.argv[1]) / "state" / "supervisor"
folder.mkdir(parents=True, exist_ok=True)
(folder / "supervisord.pid").write_text(sys.argv[2] or f"{os.getpid()}\\n")
loop = subprocess.Popen([sys.executable, "-m", "spec_loop", "run", "--workspace", "."], cwd=sys.argv[1],
                        env={**os.environ, "BANACH_SUPERVISED": "1"}, stdout=open(sys.argv[3], "ab"),
                        stderr=subprocess.STDOUT)
print(loop.pid, flush=True)
loop.wait()
"""


def stopped_rows(ws: Workspace) -> list[dict]:  # type: ignore[type-arg]
    if not ws.journal_path("spec").exists():
        return []
    with Journal(ws.journal_path("spec"), readonly=True) as journal:
        return [row.data for row in journal.rows("loop.stopped")]


def parent_and_loop(ws: Workspace, log: Path, pid_file: str = "") -> tuple[subprocess.Popen[str], int]:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(ws.root), pid_file, str(log)], stdout=subprocess.PIPE,
                              text=True, cwd=ROOT, start_new_session=True)
    assert parent.stdout is not None
    return parent, int(parent.stdout.readline())


def test_a_supervised_loop_stops_cleanly_within_a_second_when_its_supervisor_is_killed(tmp_path: Path) -> None:
    ws = example(tmp_path)
    log = tmp_path / "spec.log"
    parent, loop = parent_and_loop(ws, log)
    try:
        assert wait_until(lambda: (h := holder(ws, "spec")) is not None and h.pid == loop and "stops when" in log.read_text(),
                          [ws.role_dir("spec"), tmp_path], 30), log.read_text()
        assert f"spec-loop: stops when its supervisor (pid {parent.pid}) ends" in log.read_text()
        killed = time.monotonic()
        os.kill(parent.pid, signal.SIGKILL)
        assert wait_gone(loop, 10), log.read_text()
        took = time.monotonic() - killed
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()  # type: ignore[union-attr]
    print(f"LIFELINE spec-loop ended {took:.2f}s after its parent was killed")
    assert took < 5
    assert stopped_rows(ws)[-1] == {"signal": "", "cause": SUPERVISOR_GONE}
    assert holder(ws, "spec") is None


def test_a_loop_whose_supervisor_is_gone_at_start_up_stops_at_once(tmp_path: Path) -> None:
    """supervisord killed while its program was starting: the pid file names another process than the program's
    parent, which the program sees before it takes a step."""
    ws = example(tmp_path)
    log = tmp_path / "spec.log"
    parent, loop = parent_and_loop(ws, log, pid_file="1")
    try:
        assert parent.wait(timeout=30) == 0, log.read_text()
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()  # type: ignore[union-attr]
    assert "spec-loop: its supervisor (pid 1) was gone at start-up: stopping" in log.read_text()
    assert stopped_rows(ws)[-1]["cause"] == SUPERVISOR_GONE


STUCK = """
import os, sys, threading
from shared.lifeline import watch
from shared.workspace import Workspace
os.environ["BANACH_SUPERVISED"] = "1"
print(watch(Workspace.open(sys.argv[1]), lambda cause: None, grace=0.5), flush=True)
threading.Event().wait()  # a step that does not heed the stop
"""


def test_a_program_that_does_not_stop_within_the_grace_is_killed_with_its_group(tmp_path: Path) -> None:
    ws = example(tmp_path)
    folder = ws.supervisor_dir
    folder.mkdir(parents=True, exist_ok=True)
    parent = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, os; open(sys.argv[2], 'w').write(str(os.getpid()));"
         "p = subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[3]], start_new_session=True,"
         " stdout=subprocess.PIPE, text=True); print(p.pid, flush=True); print(p.stdout.readline(), end='', flush=True);"
         "p.wait()", STUCK, str(folder / "supervisord.pid"), str(ws.root)],
        stdout=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True)
    assert parent.stdout is not None
    try:
        program = int(parent.stdout.readline())
        assert "stops when its supervisor" in parent.stdout.readline()
        killed = time.monotonic()
        os.kill(parent.pid, signal.SIGKILL)
        assert wait_gone(program, 10)
        took = time.monotonic() - killed
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
    assert 0.4 < took < 5, took
