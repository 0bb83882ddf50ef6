"""Rounds (issue 26): when nothing else is ready, a blocked item gets another round (a fresh attempt budget, the
ladder's top rung, its failure history in the prompt), up to build.rounds; only then does it wait for a person.
Real loops through `banach run --until-certified`, a scripted agent that meets one requirement and never the other."""
from __future__ import annotations

from pathlib import Path

from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import cli, custom

CANON = """---
area: rounds
---

## ST-1: file 1 holds done
priority: 1
paths: file1.txt
checks:
  - grep -qx done file1.txt

file1.txt holds the word done.

## ST-2: file 2 holds right
priority: 2
paths: file2.txt
checks:
  - grep -qx right file2.txt

file2.txt holds the word right (the agent writes done: never met).
"""


def workspace(tmp: Path, rounds: int) -> Workspace:
    ws = custom(tmp, CANON, "every_file.py")
    text = ws.config_file.read_text().replace("[build]\n", f"[build]\nmax_attempts = 2\nrounds = {rounds}\n", 1)
    ws.config_file.write_text(text)
    return Workspace.open(ws.root)


def ended(ws: Workspace) -> list[dict[str, object]]:
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        return [dict(row.data) for row in journal.rows("iteration.ended")]


def test_a_blocked_item_gets_another_round_before_it_waits_for_a_person(tmp_path: Path) -> None:
    ws = workspace(tmp_path, rounds=2)
    result = cli("banach", "run", "--until-certified", "--max-turns", "12", "--workspace", str(ws.root), timeout=300)
    out = result.stdout + result.stderr
    assert result.returncode == 1 and "nothing can progress: 1 item(s) blocked" in out, out
    hard = [row for row in ended(ws) if str(row["item"]).startswith("ST-2.")]
    assert [row["decision"] for row in hard] == ["rollback"] * 4, hard  # two rounds of two attempts
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        rounds = [row.data for row in journal.rows("item.round")]
        blocks = [row.data for row in journal.rows("item.blocked")]
    assert [(r["round"], r["rounds"], r["rung"]) for r in rounds] == [(2, 2, 0)]  # one rung: its top is rung 0
    assert [(b["round"], b["rounds"]) for b in blocks] == [(1, 2), (2, 2)]
    third = (ws.role_dir("build") / "iterations" / str(hard[2]["n"]) / "prompt.md").read_text()
    assert "## Round 2 of 2 on this item" in third and f"iteration {hard[0]['n']}:" in third  # round 1's history
    first = (ws.role_dir("build") / "iterations" / str(hard[0]["n"]) / "prompt.md").read_text()
    assert "Round" not in first
    status = cli("banach", "status", "--workspace", str(ws.root)).stdout
    assert "blocked after 4 turns in 2 rounds (waiting for a person)" in status, status


def test_with_one_round_a_blocked_item_waits_for_a_person_at_once(tmp_path: Path) -> None:
    """The old behaviour, build.rounds = 1."""
    ws = workspace(tmp_path, rounds=1)
    result = cli("banach", "run", "--until-certified", "--max-turns", "12", "--workspace", str(ws.root), timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    hard = [row for row in ended(ws) if str(row["item"]).startswith("ST-2.")]
    assert len(hard) == 2
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        assert not journal.rows("item.round")
    status = cli("banach", "status", "--workspace", str(ws.root)).stdout
    assert "blocked after 2 turns in 1 round (waiting for a person): " in status, status
