"""The view a confined program gets (shared/isolation/view.py), tried from inside by real programs: what it reads,
which id it has, what it leaves on disk, its exit status, and what it leaves running."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shared.isolation.view import SYSTEM_FOLDERS, TURN_UID
from tests.helpers.isolation import view_unavailable

pytestmark = pytest.mark.skipif(bool(view_unavailable()), reason=f"no view on this machine: {view_unavailable()}")

PYTHON_HOME = sys.base_prefix


def in_view(tmp_path: Path, script: str, *extra: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    reads = [flag for folder in (*SYSTEM_FOLDERS, PYTHON_HOME, sys.prefix) for flag in ("--read", folder)]
    argv = [sys.executable, "-I", "-m", "shared.isolation.sandbox", "--view", *reads, "--write", str(work),
            "--home", str(home), "--home-path", os.path.expanduser("~"), *extra,
            "--", sys.executable, "-I", "-c", script]
    return subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=timeout)


def test_the_program_writes_its_folder_and_reads_nothing_else_of_the_machine(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not for the program")
    done = in_view(tmp_path, f"""
import json, os, pathlib
pathlib.Path("made.txt").write_text("by the program")
print(json.dumps([os.path.exists({str(outside)!r}), os.listdir(os.path.expanduser("~")), os.getuid()]))
""")
    assert done.returncode == 0, done.stderr
    sees_outside, home, uid = json.loads(done.stdout)
    assert not sees_outside and home == []  # a fresh HOME, nothing of the operator's
    made = tmp_path / "work" / "made.txt"
    assert made.read_text() == "by the program"
    assert made.stat().st_uid == os.geteuid()  # on disk it is the operator's, whoever the program ran as
    assert int(uid) == (TURN_UID if os.geteuid() == 0 else os.geteuid())


def test_the_exit_status_is_the_programs_and_what_it_leaves_running_is_ended(tmp_path: Path) -> None:
    marker = f"banach-view-orphan-{os.getpid()}"
    done = in_view(tmp_path, f"""
import subprocess, sys
subprocess.Popen(["/bin/sh", "-c", "exec -a {marker} sleep 300"], start_new_session=True)
sys.exit(7)
""")
    assert done.returncode == 7, done.stderr
    time.sleep(0.2)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout == "", "the orphan outlived its namespace"


def test_a_killed_program_reports_its_signal(tmp_path: Path) -> None:
    done = in_view(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert done.returncode == 128 + 9


def test_a_folder_that_cannot_be_given_refuses_the_run(tmp_path: Path) -> None:
    done = in_view(tmp_path, "print('ran')", "--write", str(tmp_path / "missing"))
    assert done.returncode == 126 and "ran" not in done.stdout
    assert "missing" in done.stderr
