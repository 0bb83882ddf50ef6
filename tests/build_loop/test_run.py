"""build-loop run: budgets stop it cleanly and say which; a usage limit is waited out, then the run resumes."""
from __future__ import annotations

from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import agent, cli


def test_turn_budget_stops_the_run_and_says_which(measured: Workspace) -> None:
    text = measured.config_file.read_text().replace("max_attempts = 4", "max_attempts = 4\nmax_turns = 2")
    measured.config_file.write_text(text)
    result = cli("build-loop", "run", "--workspace", str(measured.root), "--agent-command", agent("no_change.py"))
    assert result.returncode == 0, result.stderr
    assert "stopping cleanly: turn budget: 2 of 2 turns used" in result.stdout
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        assert journal.last("run.budget_exhausted").data["turns"] == 2  # type: ignore[union-attr]
        assert journal.last("loop.stopped").data["reason"].startswith("turn budget")  # type: ignore[union-attr]


def test_a_usage_limit_is_waited_out_then_the_run_resumes(measured: Workspace) -> None:
    text = measured.config_file.read_text().replace("max_attempts = 4", "max_attempts = 4\nmax_turns = 2")
    measured.config_file.write_text(text)
    result = cli("build-loop", "run", "--workspace", str(measured.root), "--agent-command", agent("limited_briefly.py"))
    assert result.returncode == 0, result.stderr
    assert "usage limit; waiting" in result.stdout
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        waits = journal.rows("limit.wait")
        decisions = [r.data["decision"] for r in journal.rows("iteration.ended")]
    assert waits and 0.5 <= waits[0].data["seconds"] <= 2.0
    assert decisions == ["rate_limited", "rate_limited"]  # neither progress nor failure: nothing blocked or climbed
