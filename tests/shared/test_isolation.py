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

PROBE = script("from shared.isolation.policy import restrict_self\nfrom shared.workspace import Workspace\n"
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
    assert "isolation" not in cli("spec-loop", "once", "--workspace", str(ws.root)).stderr  # once, in doctor or with -v
    result = cli("spec-loop", "-v", "once", "--workspace", str(ws.root))
    assert "spec-loop: isolation landlock: Landlock ABI" in result.stderr
    assert "writes limited to canon, inbox, state/spec" in result.stderr


READER = """
import errno, json, sys
from pathlib import Path
from shared.isolation.policy import restrict_self
from shared.journal import Journal
from shared.workspace import Workspace
ws, role = Workspace.open(sys.argv[1]), sys.argv[2]
restrict_self(ws, role)
out = {}
for name, path in json.loads(sys.argv[3]).items():
    try:
        Path(path).read_bytes()
        out[name] = "ok"
    except OSError as exc:
        out[name] = errno.errorcode.get(exc.errno, str(exc.errno))
with Journal.for_role(ws, role) as journal:  # its own key, and the other journals' heads, are still readable
    out["anchors"] = sorted(journal.append("probe", {}).anchors)
print(json.dumps(out))
"""


@pytest.mark.landlock
@pytest.mark.parametrize("role", ["spec", "plan", "build"])
def test_a_role_reads_only_its_own_key(tmp_path: Path, role: str) -> None:
    from shared.app import supervisor
    from shared.journal import Journal

    ws = example(tmp_path, backend="landlock")
    supervisor.render_config(ws)  # the credentials and the config that holds them exist, as after `banach up`
    for other in ("spec", "plan", "build"):
        if other != role:
            with Journal.for_role(ws, other) as journal:  # type: ignore[arg-type]
                journal.append("step", {})
    targets = {f"{other}.key": ws.keys_dir / f"{other}.key" for other in ("spec", "plan", "build", "monitor")}
    targets |= {"credentials": supervisor.credentials_path(ws), "supervisord.conf": ws.supervisor_conf,
                "other journal": ws.journal_path("build" if role != "build" else "plan"), "config": ws.config_file}
    result = subprocess.run([sys.executable, "-c", READER, str(ws.root), role, targets_json(targets)],  # type: ignore[arg-type]
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    readable = {name for name, verdict in seen.items() if verdict == "ok"}
    assert readable == {f"{role}.key", "other journal", "config"}, seen
    assert all(verdict == "EACCES" for name, verdict in seen.items() if name not in readable | {"anchors"}), seen
    assert seen["anchors"] == sorted(other for other in ("spec", "plan", "build") if other != role)
