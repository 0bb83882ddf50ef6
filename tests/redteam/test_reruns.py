"""Issue 39, route 3: a rerun is indistinguishable from a run. A change that breaks a test green at the checkpoint
only when the test's file runs whole (tests/helpers/agents/hostile/regression_as_flake.py) was kept: build reran
exactly the flipped tests by node id, the test passed there, and a check that reads both ways on one tree was called
flaky and left out of the ratchet. Now a rerun runs the sensors whole, with the same argv, environment and order, and
a test that flips on the turn's tree is flaky only if it flips on the checkpoint's tree too."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from build_loop.sim_agent import reference_root
from shared.journal import Journal
from shared.measurement import conformance
from shared.process import run
from shared.workspace import Workspace
from tests.helpers.workspaces import HELPERS, cli, git

HOSTILE = HELPERS / "agents" / "hostile" / "regression_as_flake.py"
GREEN_AT_CHECKPOINT = "canon:TK-1:tests::tests/test_slug.py::test_lowercases_and_joins_words"


START = '"""URL slugs."""\n\n\ndef slugify(text: str) -> str:\n    return text.lower().replace(" ", "-")\n'


def _start_from_the_wrong_slug(ws: Workspace) -> None:
    """The checkpoint: a slugify that passes TK-1's first test only, as a person's commit."""
    (ws.code / "textkit" / "slug.py").write_text(START)
    git(ws.code, "add", "-A")
    git(ws.code, "commit", "-qm", "a start")
    assert cli("plan-loop", "once", "-w", str(ws.root)).returncode == 0


@pytest.mark.parametrize("backend", ["none", pytest.param("landlock", marks=pytest.mark.landlock)])
def test_a_regression_only_in_whole_runs_is_rolled_back_not_kept_as_a_flake(measured: Workspace, backend: str) -> None:
    ws = measured
    if backend == "landlock":
        ws.config_file.write_text(ws.config_file.read_text().replace('backend = "none"', 'backend = "landlock"'))
        ws = Workspace.open(ws.root)
    _start_from_the_wrong_slug(ws)
    start = git(ws.code, "rev-parse", "HEAD")
    done = cli("build-loop", "once", "-w", str(ws.root), "--agent-command", f"{sys.executable} {HOSTILE}", timeout=300)
    assert done.returncode == 0, done.stderr
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        ended = journal.last("iteration.ended")
    assert ended is not None and ended.data["decision"] == "rollback", ended.data if ended else done.stdout
    assert str(ended.data["reason"]).startswith("the ratchet") and GREEN_AT_CHECKPOINT in str(ended.data["reason"])
    assert not ended.data.get("flaky"), ended.data
    assert git(ws.code, "rev-parse", "HEAD") == start


def test_the_hostile_code_answers_right_when_its_test_is_named(tmp_path: Path) -> None:
    """The control: run by node id, as the old rerun ran it, the code passes the test it breaks in whole runs."""
    code = tmp_path / "code"
    (code / "textkit").mkdir(parents=True)
    (code / "textkit" / "__init__.py").write_text("")
    subprocess.run([sys.executable, str(HOSTILE)], cwd=code, check=True, capture_output=True)
    canon = reference_root().parent / "workspace" / "canon"
    verdicts = {}
    for node in ("tests/test_slug.py", "tests/test_slug.py::test_lowercases_and_joins_words"):
        measured = conformance.prepare(canon, code, (node,), tmp_path / "run")
        try:
            outcome = run(measured.request(env={"PATH": "/usr/bin:/bin"}, timeout=60, limits=None))
        finally:
            measured.close()
        verdicts[node] = measured.judge(outcome).results["tests/test_slug.py::test_lowercases_and_joins_words"]
    assert verdicts == {"tests/test_slug.py": False, "tests/test_slug.py::test_lowercases_and_joins_words": True}
