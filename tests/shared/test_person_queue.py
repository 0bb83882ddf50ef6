"""Issue 43, "what needs me, and why": status and `banach run` lead with what waits for a person (a blocked item, a
pause, an unmeasured requirement, a refused draft), each with its real cause (the failing assertion, not the last
turn's decision) and the one command that clears it; counts are honest ("2 turns in 1 round"); a round in which no
attempt changed anything is not followed by another without a person; `build-loop unblock` takes a requirement id and
says what the unblock may spend. Through the real executables."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from build_loop.history import resolve
from shared.app.status import render
from shared.errors import BanachError
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import cli, custom, git, land

HOLDS = """---
area: q
---

## Q-0: the readme is there
priority: 5
paths: README.md
checks:
  - test -f README.md

The code has a README.
"""
ANSWER = """---
area: answer
---

## Q-1: the answer is 42
priority: 1
paths: answer.py
tests: tests/test_answer.py

`answer.answer()` returns 42.
"""
TEST = """from answer import answer


def test_the_answer():
    assert answer() == 42
"""


def blocked_workspace(tmp: Path, *, rounds: int = 3) -> Workspace:
    """Q-1 fails on a real assertion (the code says 41); the agent changes nothing."""
    ws = custom(tmp, HOLDS, "no_change.py", config="")
    ws.config_file.write_text(ws.config_file.read_text().replace(
        'agent = "scripted"', f'agent = "scripted"\nmax_attempts = 2\nrounds = {rounds}'))
    (ws.code / "answer.py").write_text("def answer():\n    return 41\n")
    git(ws.code, "add", "answer.py")
    git(ws.code, "commit", "-q", "-m", "the answer, almost")
    land(ws, {"requirements/answer.md": ANSWER, "tests/test_answer.py": TEST})
    return Workspace.open(ws.root)


def run(ws: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
    return cli("banach", "run", "--until-certified", "--workspace", str(ws.root), *args, timeout=300)


def test_a_blocked_item_says_why_its_test_fails_and_what_clears_it(tmp_path: Path) -> None:
    ws = blocked_workspace(tmp_path)
    result = run(ws, "--max-turns", "20")
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 1, result.stdout + result.stderr
    # every attempt of the round changed nothing: no second or third round is spent without a person
    assert sum(line.startswith("build iteration ") for line in lines) == 2, lines
    last = lines[-1]
    assert last.startswith("run: NOT CERTIFIED: waiting for you: Q-1 is blocked after 2 turns in 1 round (no attempt "
                           "of its last round changed anything): tests/test_answer.py:"), last
    assert "test_the_answer: assert answer() == 42 -> assert 41 == 42" in last, last
    assert last.endswith(f"do: build-loop unblock Q-1 -w {ws.root}"), last

    status = cli("banach", "status", "-w", str(ws.root)).stdout.splitlines()
    assert status[:2] == ["WAITING FOR YOU (1)", "  1. Q-1 is blocked after 2 turns in 1 round (no attempt of its last "
                                                 "round changed anything)"], status
    assert status[2].startswith("     why: tests/test_answer.py:") and status[2].endswith("assert 41 == 42"), status
    assert status[3] == f"     do:  build-loop unblock Q-1 -w {ws.root}"
    assert "it may spend up to 6 more turns" in status[4]
    blocked = next(line for line in status if line.startswith("BLOCKED"))
    assert "blocked after 2 turns in 1 round" in blocked and "the last turn: the turn left no change in scope" in blocked
    info = json.loads(cli("banach", "status", "--json", "-w", str(ws.root)).stdout)
    assert [(need["kind"], need["subject"], need["button"]) for need in info["needs"]] == [("blocked", "Q-1", "unblock")]

    with Journal(ws.journal_path("build"), readonly=True) as journal:
        (block,) = [row.data for row in journal.rows("item.blocked")]
        assert not journal.rows("item.round")
    assert block["turns"] == 2 and block["changed_nothing"] is True
    assert "assert 41 == 42" in block["evidence"]["cause"]

    unblocked = cli("build-loop", "unblock", "Q-1", "-w", str(ws.root))
    assert unblocked.returncode == 0, unblocked.stderr
    assert unblocked.stdout.startswith(f"unblocked Q-1 (item {block['item']}) under canon v2: it may spend up to 6 more "
                                       "turns (2 attempts a round, up to 3 rounds")
    assert "WAITING FOR YOU" not in cli("banach", "status", "-w", str(ws.root)).stdout
    again = cli("build-loop", "unblock", "Q-1", "-w", str(ws.root))
    assert again.returncode == 1 and "Q-1 is not blocked under canon v2; blocked now: none" in again.stderr


def test_an_item_id_still_unblocks_and_a_requirement_of_two_blocked_items_is_refused() -> None:
    blocks: dict[str, dict[str, object]] = {"Q-1.aaaaaa": {}, "Q-2.bbbbbb": {}, "Q-2.cccccc": {}}
    assert resolve("Q-1.aaaaaa", blocks, 3) == "Q-1.aaaaaa" and resolve("Q-1", blocks, 3) == "Q-1.aaaaaa"
    with pytest.raises(BanachError, match=r"Q-2 names 2 blocked items \(Q-2.bbbbbb, Q-2.cccccc\); name the one"):
        resolve("Q-2", blocks, 3)
    with pytest.raises(BanachError, match=r"Q-9 is not blocked under canon v3; blocked now: Q-1 \(item Q-1.aaaaaa\)"):
        resolve("Q-9", blocks, 3)


def test_a_paused_build_a_refused_draft_and_an_unmeasured_requirement_wait_for_a_person(tmp_path: Path) -> None:
    ws = blocked_workspace(tmp_path)
    land(ws, {"requirements/loose.md": "## Q-5: the code is pleasant to read\npriority: 9\npaths: answer.py\n\n"
                                       "Nothing checks this yet.\n",
              "requirements/more.md": "## Q-2: there is another file\npriority: 2\npaths: other.py\nchecks:\n"
                                      "  - test -f other.py\n\nother.py exists.\n"})
    (ws.inbox / "broken.md").write_text("## Q-3: no text\npriority: 1\n")
    assert cli("spec-loop", "once", "-w", str(ws.root)).returncode == 1  # refused, into inbox/rejected
    result = run(ws, "--agent-command", "false")  # an agent that cannot run, on two items: build pauses
    assert result.returncode == 1, result.stdout + result.stderr
    status = cli("banach", "status", "-w", str(ws.root)).stdout
    head = status.split("workspace   ")[0]
    assert head.startswith("WAITING FOR YOU (4)\n  1. Q-1 is blocked after 2 turns in 1 round"), status
    assert "2. build is paused: its agent failed to run on several items" in head
    assert "why: the agent failed to run on the last 3 turns (command: false: exit code 1); its stderr ended: (it " \
           "printed nothing on stderr)" in head
    assert f"do:  build-loop resume -w {ws.root}" in head
    assert "3. Q-5 unmeasured: no test or check measures it" in head
    assert f"do:  spec-loop edit requirements/loose.md -w {ws.root}" in head
    assert "4. spec-loop refused the draft inbox/rejected/broken.md: canon did not move" in head
    assert "why: broken.md:1: Q-3 has no text" in head and "do:  mv inbox/rejected/broken.md inbox/" in head
    assert "None" not in status


def test_status_says_no_python_none_for_a_stopped_program(measured: Workspace) -> None:
    info = json.loads(cli("banach", "status", "--json", "-w", str(measured.root)).stdout)
    info["processes"] = {"spec": {"state": "RUNNING", "pid": 41}, "build": {"state": "STOPPED", "pid": None}}
    text = render(info)
    assert "processes   supervisord: spec running (pid 41), build stopped" in text and "None" not in text
    assert "None" not in cli("banach", "status", "-w", str(measured.root)).stdout
