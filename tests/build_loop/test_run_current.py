"""What runs now: build writes state/build/current.json while an agent's turn runs and removes it when the turn
ends; `banach status` shows the turn (item, agent, seconds), nothing when build is idle, and a record left by a
killed build-loop as stale, until the next start's recovery removes it."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from shared.atomic import write_json
from shared.contracts import current_turn
from shared.workspace import Workspace
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import AGENTS, agent, cli


def status(ws: Workspace) -> tuple[dict, str]:  # type: ignore[type-arg]
    info = json.loads(cli("banach", "status", "--json", "--workspace", str(ws.root)).stdout)
    return info, cli("banach", "status", "--workspace", str(ws.root)).stdout


def now_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("now ")]


def test_status_shows_the_running_turn_and_nothing_once_it_ends(measured: Workspace) -> None:
    record = measured.role_dir("build") / current_turn.FILE_NAME
    build = subprocess.Popen([sys.executable, "-m", "build_loop", "run", "--workspace", str(measured.root),
                              "--agent-command", agent("never_returns.py")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(record.exists, [measured.role_dir("build")], 60)
        info, text = status(measured)
    finally:
        build.send_signal(signal.SIGTERM)  # the turn is abandoned and rolled back: a turn that ends
        out, err = build.communicate(timeout=60)
    assert build.returncode == 0, err
    now = info["now"]
    assert now["iteration"] == 1 and now["item"].startswith("TK-1.") and "never_returns.py" in now["agent"]
    assert now["stale"] == "" and now["pid"] == build.pid and 0 <= now["seconds"] < 60
    assert len(now_lines(text)) == 1, text
    assert re.match(rf"now\s+iteration 1: {re.escape(now['item'])}, .*never_returns\.py.*, running \d+ s$",
                    now_lines(text)[0]), text

    assert "abandoned" in out and not record.exists()
    info, text = status(measured)
    assert info["now"] is None and now_lines(text) == []


def test_a_killed_build_loop_leaves_a_stale_record_that_recovery_removes(measured: Workspace) -> None:
    record = measured.role_dir("build") / current_turn.FILE_NAME
    killer = f"{sys.executable} {AGENTS / 'hostile' / 'forged_recovery.py'}"  # SIGKILLs build-loop mid-turn
    cli("build-loop", "once", "--workspace", str(measured.root), "--agent-command", killer)
    assert record.exists()
    info, text = status(measured)
    assert info["now"]["iteration"] == 1 and "no longer running" in info["now"]["stale"]
    assert len(now_lines(text)) == 1 and "STALE iteration 1" in now_lines(text)[0], text
    assert ", running " not in now_lines(text)[0] and "next build-loop start rolls it back" in now_lines(text)[0]

    result = cli("build-loop", "once", "--workspace", str(measured.root), "--agent-command", agent("no_change.py"))
    assert "interrupted" in result.stdout, result.stdout + result.stderr
    assert not record.exists()
    assert status(measured)[0]["now"] is None


def test_a_record_older_than_the_turn_s_budget_is_stale_even_with_its_process_alive(tmp_path: Path) -> None:
    write_json(tmp_path / current_turn.FILE_NAME, {"n": 4, "item": "TK-1.abcdef", "agent": "a", "pid": os.getpid(),
                                                   "started": time.time() - 2000, "turn_timeout": 60})
    turn = current_turn.read(tmp_path)
    assert turn is not None and "older than the turn's budget" in turn.stale
    current_turn.started(tmp_path, n=5, item="TK-2.abcdef", agent="b", turn_timeout=60)
    turn = current_turn.read(tmp_path)
    assert turn is not None and turn.stale == "" and turn.n == 5 and turn.pid == os.getpid()
    current_turn.ended(tmp_path)
    assert current_turn.read(tmp_path) is None
