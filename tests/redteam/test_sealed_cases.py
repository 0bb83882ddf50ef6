"""Issue 39: sealed cases make the code compute. An implementation that reads every file and object it can reach (the
visible tests at turn time, and at run time its tests on disk, its callers' frames, every test in memory: tests/
helpers/agents/hostile/runtime_oracle.py) finds no expected value of a sealed case, since only the inputs enter the
run, and is never certified in 20 fresh certifying passes; an honest implementation is, the first time.

As plan does it: `plan-loop certify` on a person's commit, under Landlock."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from canon.store import CanonStore
from canon.visible import export_visible
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import HELPERS, cli, git
from tests.redteam.test_held_back import DOCUMENT, VISIBLE, mathkit

ORACLE = HELPERS / "agents" / "hostile" / "runtime_oracle.py"
CASES = {"call": "mathkit.digits.digit_sum",
         "cases": [{"args": [n], "returns": sum(map(int, str(n)))} for n in (987654321, 4096, 5, 100000000001, 77, 0)]}
HONEST = "def digit_sum(n):\n    return sum(int(digit) for digit in str(n))\n"
pytestmark = pytest.mark.landlock


def sealed_workspace(tmp_path: Path) -> Workspace:
    ws = mathkit(tmp_path, held_back=False, backend="landlock", allows=True)
    document = DOCUMENT.format(extra=f"allows: {', '.join(k for k in ('frames', 'gc', 'modules', 'proc'))}\n"
                                     "sealed: sealed/digits.json\n")
    (tmp_path / "mathkit.md").write_text(document)
    (tmp_path / "digits.json").write_text(json.dumps(CASES))
    done = cli("spec-loop", "add", "mathkit.md", "digits.json", "--workspace", str(ws.root), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    return Workspace.open(ws.root)


def commit(ws: Workspace, files: dict[str, str]) -> None:
    for name, text in files.items():
        (ws.code / name).parent.mkdir(parents=True, exist_ok=True)
        (ws.code / name).write_text(text)
    git(ws.code, "add", "-A")
    git(ws.code, "commit", "-qm", "a change")


def certify(ws: Workspace) -> str:
    done = cli("plan-loop", "certify", "--workspace", str(ws.root), timeout=300)
    return done.stdout + done.stderr


def certificates(ws: Workspace) -> int:
    with Journal(ws.journal_path("plan"), readonly=True) as journal:
        return len(journal.rows("certificate"))


def plant(ws: Workspace, way: str, canon: Path) -> None:
    planted = subprocess.run([sys.executable, str(ORACLE), way, "--canon", str(canon)], cwd=ws.code, capture_output=True,
                             text=True)
    assert planted.returncode == 0, planted.stderr
    git(ws.code, "add", "-A")
    git(ws.code, "commit", "-qm", f"the {way} oracle")


@pytest.mark.slow  # 20 plan passes (about 20 s); CI runs it with the slow suites
def test_an_oracle_that_reads_everything_it_can_reach_is_never_certified_against_sealed_cases(tmp_path: Path) -> None:
    ws = sealed_workspace(tmp_path)
    seen = tmp_path / "visible"
    export_visible(CanonStore(ws.canon).git, CanonStore(ws.canon).head() or "", seen)  # what its turn reads
    runs = 0
    for way in ("guess", "frames", "disk"):
        plant(ws, way, seen)
        for _ in range(7 if way != "disk" else 6):
            out = certify(ws)
            runs += 1
            assert "CERTIFIED" not in out.replace("NOT CERTIFIED", ""), (way, out)
            plan = json.loads(ws.fix_plan_json.read_text())
            evidence = [e for item in plan["items"] for e in item["evidence"]]
            assert [e["check"] for e in evidence] == ["sealed cases"], evidence  # the visible test passes: tabled
            assert "987654321" not in json.dumps(plan) and "100000000001" not in json.dumps(plan)
    assert runs == 20 and certificates(ws) == 0


def test_the_control_an_oracle_that_could_read_the_sealed_cases_would_be_certified(tmp_path: Path) -> None:
    """Sealed cases are a promise of their reach: with canon's own folder (sealed/ in it) readable, as only isolation
    'none' would let a turn read it, the same oracle tables their answers and is certified."""
    ws = sealed_workspace(tmp_path)
    plant(ws, "frames", ws.canon)
    out = certify(ws)
    assert "CERTIFIED" in out.replace("NOT CERTIFIED", ""), out


def test_an_honest_implementation_is_certified_against_the_same_sealed_cases(tmp_path: Path) -> None:
    ws = sealed_workspace(tmp_path)
    commit(ws, {"mathkit/__init__.py": "", "mathkit/digits.py": HONEST})
    out = certify(ws)
    assert "CERTIFIED" in out.replace("NOT CERTIFIED", "") and certificates(ws) == 1, out
    status = cli("banach", "status", "--workspace", str(ws.root)).stdout
    assert "sealed cases: the code computed answers it never saw: HB-1" in status, status
    assert VISIBLE  # the visible tests pass too
