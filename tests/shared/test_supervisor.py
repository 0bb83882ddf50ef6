"""The three loops under a real supervisord: up, status, supervisorctl, SIGKILL and restart, down."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from shared.app import supervisor
from shared.contracts import fix_plan as fix_plan_file
from shared.journal import Journal
from shared.socket_path import address
from shared.workspace import Workspace
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import HELPERS, agent, cli, example, git

pytestmark = pytest.mark.slow


@pytest.fixture
def running(tmp_path: Path):  # type: ignore[no-untyped-def]
    """The example under supervisord, in a folder deep enough that its socket's path does not fit an address."""
    extra = f'\n[agents.slow]\npreset = "command"\ncommand = "{agent("never_returns.py")}"\n'
    deep = tmp_path / "a-folder-deep-enough-that-the-supervisor-socket-path-is-longer-than-107-bytes"
    deep.mkdir()
    ws = example(deep, backend="landlock", extra=extra)
    assert len(os.fsencode(ws.supervisor_dir / "supervisor.sock")) > 107
    text = ws.config_file.read_text().replace('agent = "sim"', 'agent = "slow"')
    ws.config_file.write_text(text)
    ws = Workspace.open(ws.root)
    supervisor.up(ws)
    try:
        yield ws
    finally:
        supervisor.down(ws)


def pids(ws: Workspace) -> dict[str, int | None]:
    return {p.role: p.pid for p in supervisor.states(ws) if p.state == "RUNNING"}


def rows(ws: Workspace, role: str, kind: str) -> list:  # type: ignore[type-arg]
    journal = Journal.reader(ws.journal_path(role))  # type: ignore[arg-type]
    if journal is None:
        return []
    with journal:
        return journal.rows(kind)


def test_up_status_supervisorctl_and_down(running: Workspace) -> None:
    ws = running
    assert wait_until(lambda: len(pids(ws)) == 3, [ws.supervisor_dir], 30)
    info = json.loads(cli("banach", "status", "--json", "--workspace", str(ws.root)).stdout)
    assert set(info["processes"]) == {"spec", "plan", "build"}
    assert all(p["state"] == "RUNNING" and p["pid"] for p in info["processes"].values())
    ctl = subprocess.run([sys.executable, "-c", "from supervisor.supervisorctl import main; main()", "-c",
                          str(ws.supervisor_conf), "status"], capture_output=True, text=True, timeout=30)
    assert ctl.stdout.count("RUNNING") == 3, ctl.stdout
    assert "%(here)s" in ws.supervisor_conf.read_text() and str(ws.root) not in ws.supervisor_conf.read_text()
    bound = address(ws.supervisor_dir, "supervisor.sock")  # too deep to bind as is: a short link to the same folder
    assert f"file={bound}\n" in ws.supervisor_conf.read_text() and bound.parent.resolve() == ws.supervisor_dir.resolve()
    assert stat.S_ISSOCK((ws.supervisor_dir / "supervisor.sock").stat().st_mode)  # the socket file is in the workspace
    assert wait_until(lambda: rows(ws, "plan", "pass"), [ws.role_dir("plan")], 60)
    assert "plan pass" in cli("banach", "logs", "plan", "--workspace", str(ws.root)).stdout


def test_sigkill_of_build_mid_turn_is_recovered(running: Workspace) -> None:
    ws = running
    assert wait_until(lambda: rows(ws, "build", "iteration.started"), [ws.role_dir("build")], 90)
    checkpoint = rows(ws, "build", "iteration.started")[-1].data["checkpoint"]
    old = pids(ws)["build"]
    assert old
    os.kill(old, signal.SIGKILL)
    assert wait_until(lambda: pids(ws).get("build") not in (None, old), [ws.supervisor_dir], 60)
    assert wait_until(lambda: any(r.data.get("decision") == "interrupted" for r in rows(ws, "build", "iteration.ended")),
                      [ws.role_dir("build")], 60)
    interrupted = [r for r in rows(ws, "build", "iteration.ended") if r.data.get("decision") == "interrupted"][0]
    assert interrupted.data["n"] == 1
    assert git(ws.code, "rev-parse", "HEAD") == checkpoint
    assert cli("banach", "journal", "verify", "--workspace", str(ws.root)).returncode == 0
    assert fix_plan_file.read(ws.fix_plan_json) is not None


@pytest.mark.parametrize("role", ["spec", "plan"])
def test_sigkill_of_spec_or_plan_brings_it_back(running: Workspace, role: str) -> None:
    ws = running
    assert wait_until(lambda: rows(ws, role, "loop.started"), [ws.role_dir(role)], 30)  # type: ignore[arg-type]
    old = pids(ws)[role]
    assert old
    os.kill(old, signal.SIGKILL)
    assert wait_until(lambda: pids(ws).get(role) not in (None, old), [ws.supervisor_dir], 60)
    assert wait_until(lambda: len(rows(ws, role, "loop.started")) >= 2, [ws.role_dir(role)], 60)  # type: ignore[arg-type]
    assert cli("banach", "journal", "verify", "--workspace", str(ws.root)).returncode == 0


def test_sigterm_is_a_clean_journaled_stop(running: Workspace) -> None:
    ws = running
    assert wait_until(lambda: rows(ws, "build", "iteration.started"), [ws.role_dir("build")], 90)
    link = address(ws.supervisor_dir, "supervisor.sock").parent
    assert link.is_symlink()
    supervisor.down(ws)
    assert not link.is_symlink()  # down removes the short link it no longer needs
    stopped = rows(ws, "build", "loop.stopped")
    assert stopped and stopped[-1].data["signal"] == "SIGTERM"
    ended = rows(ws, "build", "iteration.ended")
    assert ended and ended[-1].data["decision"] == "abandoned"
    assert git(ws.code, "status", "--porcelain") == ""
    assert rows(ws, "plan", "loop.stopped") and rows(ws, "spec", "loop.stopped")


# issue 11, class 8: the control plane is out of the agent's reach ------------------------------------
def test_the_socket_refuses_a_caller_without_the_password(running: Workspace) -> None:
    import xmlrpc.client

    from supervisor.xmlrpc import SupervisorTransport

    ws = running
    url = f"unix://{address(ws.supervisor_dir, 'supervisor.sock')}"
    for username, password in ((None, None), ("banach", "guessed")):
        proxy = xmlrpc.client.ServerProxy("http://127.0.0.1", transport=SupervisorTransport(username, password, url))
        with pytest.raises(xmlrpc.client.ProtocolError) as refused:
            proxy.supervisor.getState()
        assert refused.value.errcode == 401
    login = supervisor.credentials(ws)
    proxy = xmlrpc.client.ServerProxy("http://127.0.0.1", transport=SupervisorTransport(login.username, login.password, url))
    state = proxy.supervisor.getState()
    assert isinstance(state, dict) and state["statename"] == "RUNNING"
    for secret in (supervisor.credentials_path(ws), ws.supervisor_conf):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600, secret


@pytest.mark.landlock
def test_a_sandboxed_agent_can_neither_read_the_credentials_nor_stop_plan(running: Workspace) -> None:
    from shared.isolation.policy import sandbox_flags

    ws = running
    assert wait_until(lambda: "plan" in pids(ws), [ws.supervisor_dir], 30)
    plan_pid = pids(ws)["plan"]
    flags = sandbox_flags(ws, [ws.code])  # what build gives its agent and plan its checks
    assert flags is not None
    attacker = str(HELPERS / "agents" / "hostile" / "supervisor_client.py")
    link = address(ws.supervisor_dir, "supervisor.sock").parent  # the workspace is too deep: the socket is reached by it
    result = subprocess.run([sys.executable, "-m", "shared.isolation.sandbox", *flags, "--", sys.executable, attacker,
                             str(ws.root), str(link)], capture_output=True, text=True, timeout=60, cwd=ws.code)
    assert result.returncode == 0, result.stderr
    assert "READ " not in result.stdout, result.stdout
    for secret in ("credentials", "supervisord.conf", "build.key"):
        assert f"DENIED {ws.supervisor_dir if secret != 'build.key' else ws.keys_dir}/{secret}" in result.stdout
    said = [line for line in result.stdout.splitlines() if line.startswith("SUPERVISOR said")]
    assert len(said) == 2 and all("401 Unauthorized" in line for line in said), result.stdout
    assert f"DENIED redirect {link}: Permission denied" in result.stdout, result.stdout
    assert link.resolve() == ws.supervisor_dir.resolve()
    assert supervisor.states(ws) and pids(ws).get("plan") == plan_pid  # plan kept running, untouched
    # the same program outside the sandbox (as the person) finds the password and is obeyed: the probe is real
    control = subprocess.run([sys.executable, attacker, str(ws.root)], capture_output=True, text=True, timeout=60)
    assert f"READ {supervisor.credentials_path(ws)}" in control.stdout
    assert control.stdout.splitlines()[-1].endswith("200 OK"), control.stdout
    assert wait_until(lambda: "plan" not in pids(ws), [ws.supervisor_dir], 30)


def test_banach_up_keeps_a_provider_key_out_of_every_environment(tmp_path: Path) -> None:
    """A key exported for `banach up` would sit in supervisord's and every loop's /proc/PID/environ, which an agent of
    the same user can read (Landlock guards /proc/PID/mem, not environ): up stores it in its key file instead."""
    canary = "sk-CANARY-supervised-0451"
    extra = ('\n[gateway.providers.p]\nwire = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "BANACH_TEST_KEY"\n')
    ws = Workspace.open(example(tmp_path, backend="landlock", extra=extra).root)
    result = cli("banach", "up", "--workspace", str(ws.root), env={"BANACH_TEST_KEY": canary})
    try:
        assert result.returncode == 0, result.stderr
        assert "stored the provider key $BANACH_TEST_KEY" in result.stderr
        supervisord = int((ws.supervisor_dir / "supervisord.pid").read_text())
        running = [supervisord, *(pid for pid in pids(ws).values() if pid)]
        assert len(running) == 4
        for pid in running:
            assert canary.encode() not in Path(f"/proc/{pid}/environ").read_bytes(), pid
        assert (ws.keys_dir / "providers" / "p").read_text().strip() == canary
        assert (ws.keys_dir / "providers" / "p").stat().st_mode & 0o777 == 0o600
    finally:
        supervisor.down(ws)
