"""spec-loop run watches the inbox with watchdog: real files, waiting on events, never on sleeps."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from canon.store import CanonStore
from shared.errors import JournalError
from shared.journal import Journal
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import example

DOC = "## EX-1: reverse\npaths: textkit/reverse.py\ntests: tests/test_reverse.py\n\nReverses text.\n"
TEST = "from textkit.reverse import reverse\n\n\ndef test_reverse():\n    assert reverse('ab') == 'ba'\n"


def test_run_takes_drafts_as_they_land_and_a_burst_is_one_change(tmp_path: Path) -> None:
    ws = example(tmp_path)
    log = tmp_path / "spec.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "spec_loop", "run", "--workspace", str(ws.root)], stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        assert wait_until(lambda: "loop.started" in _kinds(ws), [ws.role_dir("spec")])
        draft = ws.inbox / "extras.md"
        for end in range(1, len(DOC) + 1, 7):  # an editor saving in pieces, and the test it names: one burst
            draft.write_text(DOC[:end] if end < len(DOC) else DOC)
        (ws.inbox / "test_reverse.py").write_text(TEST)
        draft.write_text(DOC)
        accepted = ws.inbox / "accepted"
        assert wait_until(lambda: len(list(accepted.iterdir())) == 2, [accepted]), log.read_text()
        assert CanonStore(ws.canon).version() == 2
        assert sorted(p.name for p in accepted.iterdir()) == ["v2-extras.md", "v2-test_reverse.py"]
        said = "accepted extras.md, test_reverse.py as canon v2 (added EX-1; conformance tests tests/test_reverse.py)"
        assert wait_until(lambda: said in log.read_text(), [tmp_path]), log.read_text()
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
    try:
        with Journal(ws.journal_path("spec"), readonly=True) as journal:
            return [row.kind for row in journal.rows()]
    except JournalError:
        return []  # spec-loop is creating it right now: no rows yet
