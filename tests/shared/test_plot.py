"""The plot is drawn from the journals, and --watch redraws when they change."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from plan_loop.passes import PlanService
from shared.app.plot import draw_workspace
from shared.workspace import Workspace
from tests.helpers.waiting import wait_until


def test_plot_is_a_png_with_the_diagnosis(measured: Workspace, tmp_path: Path) -> None:
    service = PlanService(measured)
    service.run_pass()
    service.run_pass()
    service.close()
    target = tmp_path / "plot.png"
    diagnosis = draw_workspace(measured, target)
    assert target.read_bytes()[:4] == b"\x89PNG" and diagnosis.label == "flat"


def test_watch_redraws_when_a_journal_changes(measured: Workspace, tmp_path: Path) -> None:
    target = tmp_path / "watched.png"
    log = tmp_path / "watch.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "shared", "plot", "--watch", "-o", str(target), "--workspace",
                                 str(measured.root)], stdout=out, stderr=subprocess.STDOUT)
    try:
        assert wait_until(lambda: "watching the journals" in log.read_text(), [tmp_path], 60)
        first = target.stat().st_mtime_ns
        service = PlanService(measured)
        service.run_pass()
        service.close()
        assert wait_until(lambda: "redrew" in log.read_text(), [tmp_path], 60), log.read_text()
        assert target.stat().st_mtime_ns > first
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
