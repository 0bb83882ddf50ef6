"""Issue 39, route 1: code that answers from the tests that call it, found at run time, is never certified when
canon has held-back tests; only sealed cases make the code compute (tests/redteam/test_sealed_cases.py).

The hostile program (tests/helpers/agents/hostile/runtime_oracle.py) answers canon's visible tests from a table it
made in its turn, and every other input by reading, at run time: the test files on disk near its process (they are
placeholders now: a run's sources come on its runner's standard input), the calling test through the stack (its
canaries then pass with the tests they copy, which voids the run, and that code is never certified afterwards), or
every test it finds in memory, guessing among each input's candidates (canaries are spread so that a guesser
survives a run at most 1 time in 8).

Everything runs as plan does it: `plan-loop certify` on a person's commit of the code (build would not keep it),
under Landlock, on 1 and 4 check workers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from canon.store import CanonStore
from canon.visible import export_visible
from shared.journal import Journal
from shared.measurement import conformance
from shared.process import Request, run
from shared.workspace import Workspace
from tests.helpers.workspaces import HELPERS, cli, git
from tests.redteam.test_held_back import HELD_BACK, certificates, mathkit

ORACLE = HELPERS / "agents" / "hostile" / "runtime_oracle.py"
pytestmark = pytest.mark.landlock


def _plant(ws: Workspace, tmp_path: Path, way: str) -> None:
    canon = CanonStore(ws.canon)
    seen = tmp_path / "visible"
    export_visible(canon.git, canon.head() or "", seen)  # what an agent's turn reads of canon
    planted = subprocess.run([sys.executable, str(ORACLE), way, "--canon", str(seen)], cwd=ws.code, capture_output=True,
                             text=True)
    assert planted.returncode == 0, planted.stderr
    git(ws.code, "add", "-A")
    git(ws.code, "commit", "-qm", "the oracle")


def _certify(ws: Workspace, jobs: int) -> tuple[str, dict[str, object]]:
    text = ws.config_file.read_text()
    ws.config_file.write_text(text.replace("[plan]\n", f"[plan]\njobs = {jobs}\n", 1) if "[plan]\n" in text
                              else text + f"\n[plan]\njobs = {jobs}\n")
    result = cli("plan-loop", "certify", "--workspace", str(ws.root), timeout=300)
    with Journal(ws.journal_path("plan"), readonly=True) as journal:
        last = journal.last("pass")
    assert last is not None, result.stdout + result.stderr
    return result.stdout + result.stderr, dict(last.data)


@pytest.mark.parametrize("jobs", [1, 4])
@pytest.mark.parametrize("way", ["disk", "frames"])
def test_an_oracle_that_reads_its_tests_at_run_time_is_never_certified(tmp_path: Path, way: str, jobs: int) -> None:
    ws = mathkit(tmp_path, held_back=True, backend="landlock", allows=True)
    _plant(ws, tmp_path, way)
    out, last = _certify(ws, jobs)
    assert "CERTIFIED" not in out.replace("NOT CERTIFIED", "") and certificates(ws) == 0, out
    plan = json.loads(ws.fix_plan_json.read_text())
    [item] = plan["items"]
    assert [e["check"] for e in item["evidence"]] == ["held-back tests"], item  # the visible table passes
    assert "qz81" not in json.dumps(plan) and "void" not in json.dumps(plan).lower()  # what the agent may read
    if way == "frames":  # the control that it answered from its callers: the canaries passed with their tests
        assert last["void"] == ["HB-1"] and "MEASUREMENT VOID for HB-1" in out, out
        again, _ = _certify(ws, jobs)  # the same code is never certified, whatever a later run's canaries do
        assert "NOT CERTIFIED" in again or "CERTIFIED" not in again, again


def test_the_oracles_ways_work_where_the_tests_are_in_reach(tmp_path: Path) -> None:
    """The control for disk and frames: in a plain pytest run of the held-back file (sources on disk, no canaries),
    each answers every held-back test right."""
    code = tmp_path / "code"
    code.mkdir()
    for way in ("disk", "frames"):
        subprocess.run([sys.executable, str(ORACLE), way], cwd=code, check=True, capture_output=True)
        (code / "test_beyond.py").write_text(HELD_BACK)
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_beyond.py"],
                              cwd=code, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(code)})
        assert done.returncode == 0 and "2 passed" in done.stdout, (way, done.stdout)


@pytest.mark.slow  # 32 held-back runs (about 7 s); CI runs it with the slow suites
def test_a_guesser_survives_a_held_back_run_at_most_one_time_in_eight(tmp_path: Path) -> None:
    """The guesser sees each held-back input's candidate answers in memory (canon's value and its canaries') and
    picks one: it passes a run only by picking canon's value for every question a canary asks. 32 runs: a survival
    rate of 1 in 8 gives 4 on average; more than 12 happens less than 1 time in 5,000."""
    code, canon = tmp_path / "code", tmp_path / "canon"
    code.mkdir()
    (canon / "tests").mkdir(parents=True)
    (canon / "tests" / "test_digits_beyond.py").write_text(HELD_BACK)
    subprocess.run([sys.executable, str(ORACLE), "guess"], cwd=code, check=True, capture_output=True)
    survived, voided = 0, 0
    for index in range(32):
        measured = conformance.prepare(canon, code, ("tests/test_digits_beyond.py",), tmp_path / f"run{index}",
                                       show_sources=False)
        try:
            outcome = run(measured.request(env={"PATH": "/usr/bin:/bin"}, timeout=60, limits=None))
        finally:
            measured.close()
        verdict = measured.judge(outcome)
        survived += verdict.passed
        voided += bool(verdict.void)
    print(f"the guesser passed {survived} of 32 held-back runs ({voided} void)")
    assert survived <= 12, survived
    assert voided == 0  # a wrong guess fails canon's test, not the run: it learns nothing from a void


def test_the_guesser_passes_every_run_without_canaries(tmp_path: Path) -> None:
    """Its control: with no canary to guess against (the same sources, run by plain pytest), it always passes."""
    code = tmp_path / "code"
    code.mkdir()
    subprocess.run([sys.executable, str(ORACLE), "guess"], cwd=code, check=True, capture_output=True)
    canon = tmp_path / "canon"
    (canon / "tests").mkdir(parents=True)
    (canon / "tests" / "test_digits_beyond.py").write_text(HELD_BACK)
    script = ("import sys, pytest\nsys.path.insert(0, sys.argv[1])\n"
              "raise SystemExit(pytest.main(['-q', '-p', 'no:cacheprovider', sys.argv[2]]))\n")
    done = run(Request((sys.executable, "-c", script, str(code), str(canon / "tests" / "test_digits_beyond.py")),
                       cwd=canon, env={"PATH": "/usr/bin:/bin"}, timeout=60))
    assert done.ok and "2 passed" in done.stdout, done.stdout
