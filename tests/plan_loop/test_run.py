"""plan-loop run re-plans on what it watches: a commit landing in the code repository, a new canon version."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import cli, git

DOC = "## EX-1: a note\npaths: textkit/note.py\n\nProse only.\n"


def passes(ws: Workspace) -> list[dict]:  # type: ignore[type-arg]
    with Journal(ws.journal_path("plan"), readonly=True) as journal:
        return [row.data for row in journal.rows("pass")]


def kinds(ws: Workspace) -> list[str]:
    with Journal(ws.journal_path("plan"), readonly=True) as journal:
        return [row.kind for row in journal.rows()]


def test_run_replans_when_a_commit_lands_and_when_canon_changes(measured: Workspace, tmp_path: Path) -> None:
    before = len(passes(measured))
    log = tmp_path / "plan.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "plan_loop", "run", "--workspace", str(measured.root)],
                                stdout=out, stderr=subprocess.STDOUT)
    plan_state = [measured.role_dir("plan")]
    try:
        assert wait_until(lambda: "loop.started" in kinds(measured), plan_state), log.read_text()
        (measured.code / "NOTES.txt").write_text("a commit build might have landed\n")
        git(measured.code, "add", "NOTES.txt")
        git(measured.code, "commit", "-q", "-m", "notes")
        head = git(measured.code, "rev-parse", "HEAD")
        assert wait_until(lambda: passes(measured)[-1]["code_commit"] == head, plan_state), log.read_text()
        assert "[1 build commit(s) landed]" in log.read_text()

        added = cli("spec-loop", "add", "--name", "extras.md", "--workspace", str(measured.root), "--", DOC)
        assert added.returncode == 0, added.stdout + added.stderr
        assert wait_until(lambda: passes(measured)[-1]["canon_version"] == 2, plan_state), log.read_text()
        assert "[canon v2]" in log.read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()
    assert len(passes(measured)) == before + 2  # one pass per change, not one per file event
    assert kinds(measured)[-1] == "loop.stopped"
