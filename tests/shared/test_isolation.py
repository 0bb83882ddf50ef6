"""Each role's own restriction, as the loops apply it at start-up: writes outside its row fail with EACCES."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shared.workspace import Workspace
from tests.helpers.probe import script, targets_json
from tests.helpers.workspaces import cli, example

PROBE = script("from shared.isolation import restrict_self\nfrom shared.workspace import Workspace\n"
                "restrict_self(Workspace.open(sys.argv[1]), sys.argv[2])")


def probe(ws: Workspace, role: str, outside: Path) -> dict[str, str]:
    targets = {
        "canon": ws.canon / "requirements" / "probe.md", "inbox": ws.inbox / "probe.md",
        "code": ws.code / "probe.py", "code_git": ws.code / ".git" / "probe",
        "fix_plan": ws.fix_plan_json, "own_state": ws.role_dir(role) / "probe", "config": ws.config_file,
        "build_journal": ws.journal_path("build"), "plan_state": ws.role_dir("plan") / "probe",
        "keys": ws.keys_dir / "probe", "outside": outside,
    }
    result = subprocess.run([sys.executable, "-c", PROBE, str(ws.root), role, targets_json(targets)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


ALLOWED = {
    "spec": {"canon", "inbox", "own_state"},
    "plan": {"fix_plan", "own_state", "plan_state"},
    "build": {"code", "code_git", "own_state", "build_journal"},
}


@pytest.mark.landlock
@pytest.mark.parametrize("role", ["spec", "plan", "build"])
def test_each_role_writes_only_its_row(tmp_path: Path, role: str) -> None:
    ws = example(tmp_path, backend="landlock")
    seen = probe(ws, role, tmp_path / "outside.txt")
    assert {name for name, verdict in seen.items() if verdict == "ok"} == ALLOWED[role]
    assert all(verdict == "EACCES" for name, verdict in seen.items() if name not in ALLOWED[role]), seen


def test_backend_none_says_so_loudly(tmp_path: Path) -> None:
    ws = example(tmp_path, backend="none")
    result = cli("plan-loop", "once", "--workspace", str(ws.root))
    assert "WARNING: isolation backend 'none': NOTHING IS ENFORCED" in result.stderr
    info = json.loads(cli("banach", "status", "--json", "--workspace", str(ws.root)).stdout)
    assert info["isolation"]["backend"] == "none" and "NOTHING IS ENFORCED" in info["isolation"]["warning"]


@pytest.mark.landlock
def test_startup_line_reports_landlock_abi(tmp_path: Path) -> None:
    ws = example(tmp_path, backend="landlock")
    result = cli("spec-loop", "once", "--workspace", str(ws.root))
    assert "spec-loop: isolation landlock: Landlock ABI" in result.stderr
    assert "writes limited to canon, inbox, state/spec" in result.stderr
