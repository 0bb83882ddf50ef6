"""`banach journal show` (issue 29, point 7): reading a journal without sqlite3, filtered, and followed."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from shared.journal import Journal
from tests.helpers.workspaces import cli, example


def test_rows_by_kind_family_last_and_json(tmp_path: Path) -> None:
    ws = example(tmp_path)
    with Journal.for_role(ws, "build") as journal:
        for n in range(1, 6):
            journal.append("iteration.started", {"n": n})
            journal.append("iteration.ended", {"n": n, "decision": "keep" if n % 2 else "stall"})
        journal.append("loop.stopped", {"signal": "SIGTERM"})
    lines = cli("banach", "journal", "show", "build", "--kind", "iteration.ended", "-n", "2", "-w", str(ws.root)).stdout
    assert [line.split()[3] for line in lines.splitlines()] == ["iteration.ended", "iteration.ended"]
    assert '"n": 4' in lines and '"n": 5' in lines and '"n": 3' not in lines
    family = cli("banach", "journal", "show", "build", "--kind", "iteration", "-w", str(ws.root)).stdout.splitlines()
    assert len(family) == 10
    shown = cli("banach", "journal", "show", "build", "--json", "-w", str(ws.root)).stdout
    rows = [json.loads(line) for line in shown.splitlines()]
    assert rows[-1]["kind"] == "loop.stopped" and rows[-1]["data"] == {"signal": "SIGTERM"}


def test_follow_prints_rows_as_they_are_written(tmp_path: Path) -> None:
    ws = example(tmp_path)
    with Journal.for_role(ws, "plan") as journal:
        journal.append("pass", {"residual": 3})
    reader = subprocess.Popen([sys.executable, "-m", "shared", "journal", "show", "plan", "-f", "--kind", "pass",
                               "-w", str(ws.root)], stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None
        assert '"residual": 3' in reader.stdout.readline()
        time.sleep(0.2)
        with Journal.for_role(ws, "plan") as journal:
            journal.append("loop.started", {})
            journal.append("pass", {"residual": 1})
        assert '"residual": 1' in reader.stdout.readline()  # the new row, and not the loop.started between
    finally:
        reader.kill()
        reader.wait()
