"""The users backend, as root: throwaway role accounts, ownership, and supervisord's user= per program."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import build_loop
from shared.app import supervisor
from shared.environment.cache import cache_root
from shared.isolation.users import account_name, lookup, remove_users, setup_users
from shared.role_lock import holder
from shared.workspace import LOOP_ROLES, Workspace
from tests.helpers.probe import script, targets_json
from tests.helpers.processes import wait_all_gone
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import cli, example

pytestmark = [pytest.mark.root]
needs_useradd = pytest.mark.skipif(shutil.which("useradd") is None, reason="useradd is not installed")

PROBE = script()


@pytest.fixture
def reachable_interpreter():  # type: ignore[no-untyped-def]
    """The role accounts must be able to run this interpreter (a venv's, and the one it links to) and import Banach
    from where it is installed (this checkout, for an editable install). Where a folder on those paths is closed to
    other accounts (pyenv under /root here; a checkout in a 0700 folder made by mktemp -d), open it for traversal
    only (o+x, not listing) for the test, then restore it. An operator does the same, or installs Banach where the
    role accounts can run it: `banach doctor` names the folder in the way."""
    from shared.isolation.users import unreachable_ancestors

    needed = [Path(sys.executable).resolve(), Path(sys.executable).absolute().parent / "banach-probe",
              Path(build_loop.__file__).resolve()]
    found = {folder: folder.stat().st_mode for path in needed for folder in unreachable_ancestors(path)}
    blocked = sorted(found.items())
    for folder, mode in blocked:
        folder.chmod(mode | 0o001)
    try:
        yield
    finally:
        for folder, mode in blocked:
            folder.chmod(mode)


@pytest.fixture
def users_ws(reachable_interpreter):  # type: ignore[no-untyped-def]
    root = Path(tempfile.mkdtemp(prefix="banach-users-", dir="/tmp"))
    root.chmod(0o755)
    prefix = f"bt{secrets.token_hex(3)}-"
    ws = example(root, backend="users", extra="")
    ws.config_file.write_text(ws.config_file.read_text().replace('[isolation]\n', f'[isolation]\naccount_prefix = "{prefix}"\n')
                              + f'\n[env]\ncache = "{root / "env-cache"}"  # the machine\'s, here this test\'s own\n')
    ws = Workspace.open(ws.root)
    (root).chmod(0o755)
    try:
        setup_users(ws)
        yield ws
    finally:
        supervisor.down(ws)
        remove_users(ws)
        shutil.rmtree(root, ignore_errors=True)


def probe_as(ws: Workspace, role: str, outside: Path) -> dict[str, str]:
    account = lookup(account_name(ws, role))
    assert account is not None
    targets = {"canon": ws.canon / "requirements" / "textkit.md", "inbox": ws.inbox / "probe.md", "code": ws.code / "README.md",
               "fix_plan": ws.plan_dir / "probe.json", "spec_state": ws.role_dir("spec") / "probe",
               "plan_state": ws.role_dir("plan") / "probe", "build_state": ws.role_dir("build") / "probe",
               "config": ws.config_file, "outside": outside,
               **{f"{other}_env_cache": cache_root(ws, other) / "probe" for other in ("spec", "plan", "build")}}  # type: ignore[arg-type]
    result = subprocess.run([sys.executable, "-c", PROBE, targets_json(targets)],
                            user=account.uid, group=account.gid, extra_groups=[], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


ALLOWED = {"spec": {"canon", "inbox", "spec_state", "spec_env_cache"}, "plan": {"fix_plan", "plan_state", "plan_env_cache"},
           "build": {"code", "build_state", "build_env_cache"}}  # each account's folder in the machine's environment cache


@needs_useradd
@pytest.mark.parametrize("role", ["spec", "plan", "build"])
def test_each_account_writes_only_its_row(users_ws: Workspace, role: str) -> None:
    outside = Path("/etc/banach-probe-should-not-exist")
    seen = probe_as(users_ws, role, outside)
    assert {k for k, v in seen.items() if v == "ok"} == ALLOWED[role], seen
    assert all(v == "EACCES" for k, v in seen.items() if k not in ALLOWED[role]), seen
    assert not outside.exists()


@needs_useradd
@pytest.mark.slow
def test_supervisord_runs_each_loop_as_its_account(users_ws: Workspace) -> None:
    ws = users_ws
    supervisor.up(ws)
    running = wait_until(lambda: len([p for p in supervisor.states(ws) if p.state == "RUNNING"]) == 3, [ws.supervisor_dir],
                         30)
    assert running, "\n".join(f"{log.name}: {log.read_text()[-1500:]}" for log in ws.supervisor_dir.glob("*.log"))
    for program in supervisor.states(ws):
        uid = int(next(line for line in Path(f"/proc/{program.pid}/status").read_text().splitlines()
                       if line.startswith("Uid:")).split()[1])
        assert uid == lookup(account_name(ws, program.role)).uid  # type: ignore[union-attr]
    assert f"user={account_name(ws, 'build')}" in ws.supervisor_conf.read_text()
    assert wait_until(lambda: ws.fix_plan_json.exists(), [ws.plan_dir], 60), (ws.supervisor_dir / "plan.log").read_text()
    plan_log = (ws.supervisor_dir / "plan.log").read_text()
    assert "could not be measured" not in plan_log, plan_log  # plan's account reads build's git directory
    assert json.loads(ws.fix_plan_json.read_text())["residual"] == 5  # build's account reads plan's fix_plan
    info = json.loads(cli("banach", "status", "--json", "--workspace", str(ws.root)).stdout)
    assert info["isolation"]["backend"] == "users"
    assert all(role["enforced"] for role in info["isolation"]["roles"].values())
    # each account holds its role's lock in its own state, and its loop stops when supervisord dies (issue 42)
    loops = {p.role: p.pid for p in supervisor.states(ws) if p.role in LOOP_ROLES}
    assert {role: info["loops"][role]["running"]["pid"] for role in LOOP_ROLES} == loops
    assert all(info["loops"][role]["running"]["under"] == "supervisord" for role in LOOP_ROLES)
    os.kill(int((ws.supervisor_dir / "supervisord.pid").read_text()), signal.SIGKILL)
    assert len(wait_all_gone([pid for pid in loops.values() if pid], 30)) == 3
    assert all(holder(ws, role) is None for role in LOOP_ROLES)


def test_users_backend_refuses_the_wrong_account(tmp_path: Path) -> None:
    ws = example(tmp_path, backend="users")
    result = cli("plan-loop", "once", "--workspace", str(ws.root))
    assert result.returncode == 1
    assert "banach-plan does not exist" in result.stderr or "must run as" in result.stderr
