"""build-loop run: budgets stop it cleanly and say which; a usage limit is waited out, then the run resumes."""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import OPEN, agent, cli


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


def test_wall_clock_budget_stops_the_run_and_says_which(measured: Workspace) -> None:
    text = measured.config_file.read_text().replace("max_attempts = 4", "max_attempts = 4\nmax_seconds = 1")
    measured.config_file.write_text(text)
    result = cli("build-loop", "run", "--workspace", str(measured.root), "--agent-command", agent("slow_no_change.py"),
                 timeout=60)
    assert result.returncode == 0, result.stderr
    assert "stopping cleanly: time budget: 1s of wall-clock used" in result.stdout
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        assert journal.last("run.budget_exhausted").data["turns"] == 1  # type: ignore[union-attr]
        assert journal.last("loop.stopped").data["reason"].startswith("time budget")  # type: ignore[union-attr]


FAKE_CLAUDE = """#!{python}
import json, sys
sys.stdin.read()
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "done", "total_cost_usd": 0.6}}))
"""


def test_cost_budget_adds_up_what_the_cli_reports_and_stops(measured: Workspace, tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text(FAKE_CLAUDE.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    text = measured.config_file.read_text().replace('agent = "sim"', 'agent = "real"\nmax_cost_usd = 1.0')
    measured.config_file.write_text(text + '\n[agents.real]\npreset = "claude"\n' + OPEN)
    env = {"PATH": f"{fake.parent}:{os.environ['PATH']}"}
    result = cli("build-loop", "run", "--workspace", str(measured.root), env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "stopping cleanly: cost budget: $1.20 of $1.00 reported by the agent" in result.stdout
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        exhausted = journal.last("run.budget_exhausted")
        costs = [r.data["cost_usd"] for r in journal.rows("iteration.ended")]
    assert exhausted is not None and exhausted.data["turns"] == 2
    assert exhausted.data["cost_usd"] == pytest.approx(1.2) and costs == pytest.approx([0.6, 0.6])
