"""Issue 45's "done when", hostile side: in a TypeScript package (node --test) and a Go module, a change that fails
a test, one whose code ends its test process with success, and one whose code forges the test runner's output from
inside the test process are never kept and never certified (the agent is tests/helpers/agents/hostile/polyglot.py;
its code is real TypeScript and Go). The forgers write a pass for every test they can find: node's straight into the
report channel through /proc (reached without Landlock) or, where Landlock closes that, as node's own v8-serialized
events on its standard output; go's as go's own `--- PASS` lines and `PASS`. Either way the run's canaries are among
what they forge, and the run measures nothing."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from shared.isolation.sandbox import landlock_abi
from tests.helpers.polyglot import PROJECTS, code_head, workspace
from tests.helpers.workspaces import cli

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not shutil.which("node"), reason="needs node"),
              pytest.mark.skipif(not shutil.which("go"), reason="needs go (apt-get install golang-go)")]
LANDLOCK = [pytest.mark.landlock, pytest.mark.skipif(landlock_abi() < 1, reason="needs a kernel with Landlock")]
CASES = [pytest.param(name, mode, backend, marks=LANDLOCK if backend == "landlock" else [],
                      id=f"{name}-{mode}-{backend}")
         for name in sorted(PROJECTS) for mode, backend in
         (("wrong", "landlock"), ("exits", "landlock"), ("forges", "landlock"), ("forges", "none"))]


@pytest.mark.parametrize("name, mode, backend", CASES)
def test_a_failing_exiting_or_forging_change_is_never_kept_or_certified(tmp_path: Path, name: str, mode: str,
                                                                        backend: str) -> None:
    ws, _ = workspace(tmp_path, name, mode, backend=backend)
    start = code_head(ws)
    ran = cli("banach", "run", "--until-certified", "--max-turns", "2", "-w", str(ws), timeout=900)
    assert "CERTIFIED" not in ran.stdout.replace("NOT CERTIFIED", ""), ran.stdout
    assert "keep:" not in ran.stdout and code_head(ws) == start, ran.stdout  # nothing of it was kept
    status = json.loads(cli("banach", "status", "--json", "-w", str(ws)).stdout)
    assert status["certified"] is False
    first = json.loads((ws / "state" / "build" / "iterations" / "1" / "result.json").read_text())
    assert first["decision"] == "rollback", first
    said = first["excerpt"]
    if mode == "forges":  # the forgery happened, and is what voided the run
        assert "FORGED" in said and "measurement void" in said and "canary tests" in said, said
        route = "on the runner's output" if name == "romannum-go" else "into the report channel" \
            if backend == "none" else "in the runner's protocol"  # node's channel through /proc, closed by Landlock
        assert route in said, said
        if name == "wordcase-ts" and backend == "landlock":
            assert "EACCES" in said, said  # Landlock refused the open of its runner's channel through /proc
    elif mode == "exits":
        assert "measurement void" in said, said
    else:
        assert "measurement void" not in said and "did not pass" in said, said
