"""Flaky tests (issue 26): a check that flips on the same tree is neither a regression nor progress. Real conformance
tests that fail one run in three, seeded by a counter each run of the file advances (isolation 'none', so that the
test may write it), through plan-loop and `build-loop once`: with build.flake_reruns (the default, 2) a kept change is
not rolled back because of the flake, and a flaky "progress" is not kept; with 0 reruns, the old mistakes are made."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from plan_loop.passes import PlanService
from shared.app.init import init_workspace
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import agent, agents_readable, build_once, cli, land

DOC = """## FL-1: file 1 holds done
paths: file1.txt
tests: tests/test_fl.py

file1.txt holds the word done.
"""
# The counter advances once per run of the file (at import), never in a test: canon's canaries copy tests, not imports.
TESTS = '''from pathlib import Path

COUNTER = Path("{counter}")
RUN = int(COUNTER.read_text()) if COUNTER.exists() else 0
COUNTER.write_text(str(RUN + 1))
'''
REGRESSES = TESTS + '''

def test_needs_the_file():
    assert Path("file1.txt").read_text() == "done\\n"


def test_fails_one_run_in_three():
    assert ("fail" if RUN % 3 == 1 else "pass") == "pass"
'''
PROGRESSES = TESTS + '''

def test_passes_one_run_in_three():
    assert ("pass" if RUN % 3 == 1 else "fail") == "pass"
'''


def workspace(tmp: Path, tests: str, reruns: int) -> tuple[Workspace, Path]:
    ws = init_workspace(tmp / "ws", example=False)
    text = ws.config_file.read_text().replace('backend = "landlock"', 'backend = "none"')
    text = agents_readable(text.replace('agent = "claude"', 'agent = "scripted"'))
    text = text.replace("[build]\n", f"[build]\nflake_reruns = {reruns}\n", 1)
    ws.config_file.write_text(text + f'\n[agents.scripted]\npreset = "command"\ncommand = "{agent("every_file.py")}"\n')
    counter = tmp / "counter"
    land(ws, {"requirements/fl.md": DOC, "tests/test_fl.py": tests.format(counter=counter)})
    plan = PlanService(Workspace.open(ws.root))
    try:
        plan.measure()
    finally:
        plan.close()
    counter.write_text("0")  # build's checkpoint reads run 0
    return Workspace.open(ws.root), counter


FLAKY_TEST = "canon:FL-1:tests::tests/test_fl.py::test_fails_one_run_in_three"


@pytest.mark.parametrize("reruns", [2, 0])
def test_a_kept_change_is_not_rolled_back_because_a_flaky_test_went_red(tmp_path: Path, reruns: int) -> None:
    ws, counter = workspace(tmp_path, REGRESSES, reruns)
    data = build_once(ws)
    if not reruns:  # the old behaviour: the flake, red on run 1, reads as a regression
        assert data["decision"] == "rollback" and FLAKY_TEST in str(data["reason"]), data
        return
    assert data["decision"] == "keep", data
    # runs 1, 2, 3 of the turn's tree, then 0 (the checkpoint's reading), 4 and 5 of the checkpoint's tree
    assert data["flaky"] == {FLAKY_TEST: [False, True, True, True, False, True]}, data
    assert counter.read_text() == "6"
    status = cli("banach", "status", "--workspace", str(ws.root)).stdout
    assert f"FLAKY       {FLAKY_TEST}: read both ways on one tree" in status, status
    plan = cli("plan-loop", "once", "--workspace", str(ws.root))
    assert f"FLAKY (a canon problem: every verdict on them is weaker; make them deterministic with spec-loop edit): " \
           f"{FLAKY_TEST}" in plan.stdout, plan.stdout + plan.stderr
    with Journal(ws.journal_path("plan"), readonly=True) as journal:
        row = journal.last("pass")
    assert row is not None and row.data["flaky"] == [FLAKY_TEST]


@pytest.mark.parametrize("reruns", [2, 0])
def test_a_flaky_test_that_goes_green_is_not_progress(tmp_path: Path, reruns: int) -> None:
    ws, _counter = workspace(tmp_path, PROGRESSES, reruns)
    data = build_once(ws)
    if not reruns:  # the old behaviour: the flake, green on run 1, reads as progress and is kept
        assert data["decision"] == "keep", data
        return
    assert data["decision"] == "rollback" and str(data["reason"]).startswith("no progress"), data
    assert list(json.loads(json.dumps(data["flaky"]))) == ["canon:FL-1:tests::tests/test_fl.py::test_passes_one_run_in_three"]
