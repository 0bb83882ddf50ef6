"""Keeps are earned (issue 39): an item whose evidence includes held-back tests, which build cannot see, is kept
only on progress its visible checks show, unless they all pass; before, a change that failed no more visible checks
than the checkpoint was kept ("keep: failing 2 -> 2"), so a turn could be kept for nothing."""
from __future__ import annotations

import sys
from pathlib import Path

from build_loop.sensors import Reading, refusal
from shared.journal import Journal
from tests.helpers.workspaces import cli
from tests.redteam.test_held_back import mathkit


def reading(**results: bool) -> Reading:
    failing = sorted(name for name, green in results.items() if not green)
    return Reading(results, 0.0, "|".join(failing), {})


def test_unseen_evidence_keeps_only_on_visible_progress_or_when_everything_visible_passes() -> None:
    before = reading(a=False, b=False)
    assert refusal(before, reading(a=False, b=False), unseen=True).startswith("no progress")
    assert refusal(before, reading(a=True, b=False), unseen=True) == ""
    assert refusal(reading(a=True), reading(a=True), unseen=True) == ""  # all visible pass: plan judges the rest
    assert refusal(reading(a=True), reading(a=True), unseen=False).startswith("no progress")
    assert refusal(reading(a=True), reading(a=False), unseen=True).startswith("the ratchet")


NO_PROGRESS = "import pathlib; p = pathlib.Path('mathkit'); p.mkdir(exist_ok=True); (p / '__init__.py').write_text(''); " \
              "(p / 'digits.py').write_text('def digit_sum(n):\\n    return -1\\n')"


def test_a_turn_with_no_visible_progress_on_an_item_with_held_back_tests_is_rolled_back(tmp_path: Path) -> None:
    ws = mathkit(tmp_path, held_back=True, backend="none")
    assert cli("plan-loop", "once", "-w", str(ws.root)).returncode == 0
    done = cli("build-loop", "once", "-w", str(ws.root), "--agent-command", f"{sys.executable} -c \"{NO_PROGRESS}\"")
    assert done.returncode == 0, done.stderr
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        ended = journal.last("iteration.ended")
    assert ended is not None and ended.data["decision"] == "rollback", ended.data if ended else done.stdout
    assert str(ended.data["reason"]).startswith("no progress"), ended.data
