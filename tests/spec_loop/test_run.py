"""spec-loop run watches the inbox with watchdog: real files, waiting on events, never on sleeps."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from canon.store import CanonStore
from shared.journal import Journal
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import example

DOC = "## EX-1: reverse\npaths: textkit/reverse.py\n\nReverses text.\n"


def test_run_takes_drafts_as_they_land_and_a_burst_is_one_intake(tmp_path: Path) -> None:
    ws = example(tmp_path)
    log = tmp_path / "spec.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "spec_loop", "run", "--workspace", str(ws.root)], stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        assert wait_until(lambda: "loop.started" in _kinds(ws), [ws.role_dir("spec")])
        draft = ws.inbox / "extras.md"
        for end in range(1, len(DOC) + 1, 7):  # an editor saving in pieces: one burst
            draft.write_text(DOC[:end] if end < len(DOC) else DOC)
        draft.write_text(DOC)
        accepted = ws.inbox / "accepted"
        assert wait_until(lambda: any(accepted.iterdir()), [accepted]), log.read_text()
        assert CanonStore(ws.canon).version() == 2
        assert [p.name for p in accepted.iterdir()] == ["v2-extras.md"]
        (ws.inbox / "bad.md").write_text("## nope\n")
        rejected = ws.inbox / "rejected"
        assert wait_until(lambda: (rejected / "bad.md.error").exists(), [rejected])
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    assert _kinds(ws)[-1] == "loop.stopped"
    assert CanonStore(ws.canon).version() == 2


def _kinds(ws) -> list[str]:  # type: ignore[no-untyped-def]
    if not ws.journal_path("spec").exists():
        return []
    with Journal(ws.journal_path("spec"), readonly=True) as journal:
        return [row.kind for row in journal.rows()]
