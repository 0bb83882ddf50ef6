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
from shared.lifeline import SUPERVISOR_GONE
from shared.role_lock import holder
from shared.socket_path import address
from shared.workspace import LOOP_ROLES, Workspace
from tests.helpers.processes import describe, in_folder, kill_tree, wait_all_gone
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import HELPERS, agent, cli, example, git, start, stop

pytestmark = pytest.mark.slow


def slow_example(folder: Path) -> Workspace:
    """The example with an agent that never returns: build is mid-turn whenever it has an item."""
    extra = f'\n[agents.slow]\npreset = "command"\ncommand = "{agent("never_returns.py")}"\n'
    ws = example(folder, backend="landlock", extra=extra)
    text = ws.config_file.read_text().replace('agent = "sim"', 'agent = "slow"')
    ws.config_file.write_text(text)
    return Workspace.open(ws.root)


@pytest.fixture
def running(tmp_path: Path):  # type: ignore[no-untyped-def]
    """The example under supervisord, in a folder deep enough that its socket's path does not fit an address."""
    deep = tmp_path / "a-folder-deep-enough-that-the-supervisor-socket-path-is-longer-than-107-bytes"
    deep.mkdir()
    ws = slow_example(deep)
    assert len(os.fsencode(ws.supervisor_dir / "supervisor.sock")) > 107
    supervisor.up(ws)
    try:
        yield ws
    finally:
        supervisor.down(ws)


def pids(ws: Workspace) -> dict[str, int | None]:
    return {p.role: p.pid for p in supervisor.states(ws) if p.state == "RUNNING"}


def loop_processes(ws: Workspace, role: str) -> list[int]:
    """/proc's view: live processes running ROLE's loop with the workspace as their folder."""
    wanted = f"\0-m\0{supervisor.EXECUTABLES[role]}\0run\0".encode()
    found = []
    for pid in in_folder(ws.root):
        try:
            if wanted in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return found


def one_set(ws: Workspace) -> bool:
    """By the locks and by /proc: each role's loop runs once, and it is supervisord's program."""
    supervised = pids(ws)
    for role in LOOP_ROLES:
        held = holder(ws, role)
        if held is None or held.pid != supervised.get(role) or loop_processes(ws, role) != [held.pid]:
            return False
    return True


def assert_one_set(ws: Workspace) -> None:
    assert wait_until(lambda: one_set(ws), [ws.supervisor_dir, *(ws.role_dir(role) for role in LOOP_ROLES)], 60), (
        f"supervised: {pids(ws)}; locks: {[holder(ws, role) for role in LOOP_ROLES]}; "
        f"/proc: {describe(in_folder(ws.root))}")


def supervisord_pid(ws: Workspace) -> int:
    return int((ws.supervisor_dir / "supervisord.pid").read_text())


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


# issue 42: one set of loops per workspace, whatever dies -------------------------------------------------------
def test_a_sigkill_of_supervisord_stops_its_loops_cleanly_and_up_starts_one_set(running: Workspace) -> None:
    ws = running
    assert wait_until(lambda: len(pids(ws)) == 3 and rows(ws, "build", "iteration.started"),
                      [ws.supervisor_dir, ws.role_dir("build")], 90)
    loops = pids(ws)
    os.kill(supervisord_pid(ws), signal.SIGKILL)
    took = wait_all_gone([pid for pid in loops.values() if pid], 45)
    print("LIFELINE after SIGKILL of supervisord: " + ", ".join(f"{role} ended in {took.get(pid, -1):.2f}s"
                                                                  for role, pid in loops.items()))
    assert len(took) == 3 and max(took.values()) < 10, took
    for role in LOOP_ROLES:
        assert rows(ws, role, "loop.stopped")[-1].data["cause"] == SUPERVISOR_GONE
        assert holder(ws, role) is None
    assert rows(ws, "build", "iteration.ended")[-1].data["decision"] == "abandoned"  # its turn rolled back, journaled
    assert not in_folder(ws.root), describe(in_folder(ws.root))  # the agent went with its loop
    info = json.loads(cli("banach", "status", "--json", "--workspace", str(ws.root)).stdout)
    assert not info["supervisor_running"] and not info["outside"]
    assert {role: loop["last_end"]["how"] for role, loop in info["loops"].items()} == dict.fromkeys(
        LOOP_ROLES, "stopped cleanly because its supervisor had died")
    again = cli("banach", "up", "--workspace", str(ws.root))
    assert again.returncode == 0, again.stderr
    assert_one_set(ws)


def test_up_at_once_after_a_sigkill_of_supervisord_never_leaves_two_loops_of_a_role(running: Workspace) -> None:
    ws = running
    assert wait_until(lambda: len(pids(ws)) == 3 and rows(ws, "build", "iteration.started"),
                      [ws.supervisor_dir, ws.role_dir("build")], 90)
    old = pids(ws)
    os.kill(supervisord_pid(ws), signal.SIGKILL)
    again = cli("banach", "up", "--workspace", str(ws.root))  # while the old loops may still be stopping
    assert again.returncode == 0, again.stderr
    assert_one_set(ws)
    assert not set(old.values()) & {holder(ws, role).pid for role in LOOP_ROLES}  # type: ignore[union-attr]
    assert len(wait_all_gone([pid for pid in old.values() if pid], 1)) == 3


def test_a_second_build_loop_run_refuses_with_the_holders_pid(running: Workspace) -> None:
    ws = running
    assert wait_until(lambda: "build" in pids(ws) and holder(ws, "build"), [ws.supervisor_dir, ws.role_dir("build")], 60)
    build = pids(ws)["build"]
    for command in (["run"], ["once", "--agent-command", agent("no_change.py")]):
        second = cli("build-loop", *command, "--workspace", str(ws.root), timeout=30)
        assert second.returncode == 1
        assert (f"build-loop {command[0]} cannot start: build already runs in the workspace {ws.root}: "
                f"build-loop run (pid {build}") in second.stderr, second.stderr
    assert pids(ws)["build"] == build


def test_up_stops_a_loop_started_by_hand_before_it_starts_the_set(tmp_path: Path) -> None:
    ws = slow_example(tmp_path)
    hand = start("plan-loop", ws, "run", log=tmp_path / "plan.log")
    try:
        assert wait_until(lambda: (h := holder(ws, "plan")) is not None and h.pid == hand.pid and h.command,
                          [ws.role_dir("plan")], 30)
        status = cli("banach", "status", "--workspace", str(ws.root)).stdout
        assert (f"OUTSIDE     plan-loop run (pid {hand.pid}) runs outside the supervisor: banach down -w {ws.root} "
                "stops it; banach up stops it before it starts the loops") in status, status
        up = cli("banach", "up", "--workspace", str(ws.root))
        assert up.returncode == 0, up.stderr
        assert f"banach up: stopped: plan-loop run (pid {hand.pid}" in up.stderr
        assert hand.wait(timeout=5) == 0  # a clean stop on SIGTERM
        assert_one_set(ws)
    finally:
        stop(hand)
        supervisor.down(ws)


def _mid_turn(ws: Workspace, before: int) -> None:
    """Wait for build to start a turn after `before` turns had started (counted before `up`: a turn started by then
    never returns)."""
    assert wait_until(lambda: len(pids(ws)) == 3 and len(rows(ws, "build", "iteration.started")) > before,
                      [ws.supervisor_dir, ws.role_dir("build")], 90)


def test_down_after_any_sequence_of_kills_leaves_no_process_in_the_workspace(tmp_path: Path) -> None:
    ws = slow_example(tmp_path)
    root = ws.root

    def kill_role(role: str) -> None:
        os.kill(pids(ws)[role], signal.SIGKILL)  # type: ignore[arg-type]

    def kill_agent() -> None:
        build = pids(ws)["build"]
        assert build
        assert wait_until(lambda: [p for p in in_folder(ws.code) if p != build], [ws.code], 30)
        for pid in in_folder(ws.code):
            os.kill(pid, signal.SIGKILL)

    sequences = {
        "supervisord alone": [lambda: os.kill(supervisord_pid(ws), signal.SIGKILL)],
        "the whole tree at once": [lambda: kill_tree(supervisord_pid(ws))],
        "build mid-turn, then down at once": [lambda: kill_role("build")],
        "the agent, plan, then supervisord": [kill_agent, lambda: kill_role("plan"),
                                              lambda: os.kill(supervisord_pid(ws), signal.SIGKILL)],
        "spec, supervisord, and a loop started by hand": [
            lambda: kill_role("spec"), lambda: os.kill(supervisord_pid(ws), signal.SIGKILL),
            lambda: wait_until(lambda: holder(ws, "spec") is None, [ws.role_dir("spec")], 30),
            lambda: hands.append(start("spec-loop", ws, "run", log=tmp_path / "spec.log")),
            lambda: wait_until(lambda: (h := holder(ws, "spec")) is not None and h.pid == hands[-1].pid,
                               [ws.role_dir("spec")], 30)],
    }
    hands: list[subprocess.Popen[bytes]] = []
    try:
        for name, kills in sequences.items():
            before = len(rows(ws, "build", "iteration.started"))
            assert cli("banach", "up", "--workspace", str(root)).returncode == 0, name
            _mid_turn(ws, before)
            for kill in kills:
                kill()
            down = cli("banach", "down", "--workspace", str(root))
            assert down.returncode == 0, (name, down.stdout, down.stderr)
            assert not in_folder(root), f"{name}: {describe(in_folder(root))}"
            assert all(holder(ws, role) is None for role in LOOP_ROLES), name
            for hand in hands:
                assert hand.wait(timeout=5) == 0 and f"stopped spec-loop run (pid {hand.pid}" in down.stdout, name
    finally:
        for hand in hands:
            stop(hand)
        supervisor.down(ws)
    assert cli("banach", "journal", "verify", "--workspace", str(root)).returncode == 0
