"""`build-loop report N --output` while turn N runs says so (issue 29, point 7), not that it ran no agent."""
from __future__ import annotations

import subprocess
import sys
import time

from shared.contracts import current_turn
from shared.workspace import Workspace
from tests.helpers.workspaces import agent, cli


def test_the_output_of_a_running_turn_is_said_to_be_coming(measured: Workspace) -> None:
    build = subprocess.Popen([sys.executable, "-m", "build_loop", "once", "-w", str(measured.root), "--agent-command",
                              agent("never_returns.py"), "--turn-timeout", "30"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not current_turn.read_all(measured.role_dir("build")) and time.monotonic() < deadline:
            time.sleep(0.1)
        said = cli("build-loop", "report", "1", "--output", "-w", str(measured.root))
        assert said.returncode == 1
        assert "iteration 1 is running now" in said.stderr and "already green" not in said.stderr, said.stderr
    finally:
        build.terminate()  # build-loop stops the turn and everything it started
        build.wait(timeout=60)
