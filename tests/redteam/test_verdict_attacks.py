"""Issue 30: code under test attacks the measurement from inside the test process (the hostile program is
tests/helpers/agents/hostile/verdict_attacks.py). Every route runs with and without Landlock, and plan's routes on 1
and on 4 check workers; none may get a keep, a closed item or a certificate, or wedge a loop past its budget.

TK-1 allows every kind of the tamper scan here (as a person may say in canon), so that each route meets the
measurement itself; tests/redteam/test_governor_attacks.py shows the scan stopping the same code first."""
from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import HELPERS, cli, git, set_config
from tests.redteam.conftest import allow_tampering, pwned

ATTACKS = HELPERS / "agents" / "hostile" / "verdict_attacks.py"
BACKENDS = ["none", pytest.param("landlock", marks=pytest.mark.landlock)]
BUDGET = 300  # seconds a loop may take here before it counts as wedged


class Listener:
    """Where the planted code says what it reached: one JSON line per connection, on a loopback port."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.heard: list[dict[str, Any]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                link, _ = self.server.accept()
            except TimeoutError:
                continue
            with link:
                link.settimeout(2)
                data = b""
                try:
                    while chunk := link.recv(4096):
                        data += chunk
                except OSError:
                    pass
            for line in data.decode(errors="replace").splitlines():
                self.heard.append(json.loads(line))

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.server.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    heard = Listener()
    yield heard
    heard.close()


def prepare(ws: Workspace, backend: str, jobs: int = 2) -> Workspace:
    set_config(ws.root, backend=backend)
    text = ws.config_file.read_text().replace('backend = "none"', f'backend = "{backend}"')
    ws.config_file.write_text(text.replace("[plan]\n", f"[plan]\njobs = {jobs}\n", 1))
    ws = Workspace.open(ws.root)
    allow_tampering(ws, network=True)  # the planted code tells the listener what it reached
    return ws


def plant(ws: Workspace, *args: str) -> None:
    """The attack lands as a person's commit would (build would not keep it); plan is the judge of record."""
    prompt = ws.state / "build" / "prompt-for-plant.md"
    prompt.parent.mkdir(parents=True, exist_ok=True)
    prompt.write_text("Requirements: TK-1\n")
    planted = subprocess.run([sys.executable, str(ATTACKS), *args], cwd=ws.code, capture_output=True, text=True,
                             env={"PATH": os.environ["PATH"], "BANACH_PROMPT_FILE": str(prompt)})
    assert planted.returncode == 0, planted.stderr
    git(ws.code, "add", "-A")
    git(ws.code, "commit", "-qm", "attack")


def certify(ws: Workspace) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    result = cli("plan-loop", "certify", "--workspace", str(ws.root), timeout=BUDGET)
    plan = json.loads(ws.fix_plan_json.read_text())
    evidence = {rid: [e for item in plan["items"] if rid in item["requirements"] for e in item["evidence"]]
                for rid in ("TK-1", "TK-2", "TK-3", "TK-4", "TK-5")}
    return result.stdout + result.stderr, evidence


def turn(ws: Workspace, *args: str) -> dict[str, Any]:
    command = f"{sys.executable} {ATTACKS} {' '.join(args)}"
    result = cli("build-loop", "once", "--workspace", str(ws.root), "--agent-command", command, timeout=BUDGET)
    assert result.returncode == 0, result.stdout + result.stderr
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        row = journal.last("iteration.ended")
    assert row is not None
    return dict(row.data)


def rolled_back(ws: Workspace, *args: str) -> dict[str, Any]:
    """One governed turn of the attack, which must end rolled back with the code where it was."""
    start = git(ws.code, "rev-parse", "HEAD")
    data = turn(ws, *args)
    assert data["decision"] == "rollback", data
    assert git(ws.code, "rev-parse", "HEAD") == start
    return data


# route 1 ------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 4])
@pytest.mark.parametrize("backend", BACKENDS)
def test_one_requirements_code_cannot_write_another_requirements_record(measured: Workspace, listener: Listener,
                                                                       backend: str, jobs: int) -> None:
    """Only textkit/slug.py exists (right); its code forges the records of the four requirements whose modules do not
    exist, by every path and pipe it can find while their checks run beside it."""
    ws = prepare(measured, backend, jobs)
    plant(ws, "siblings", "--port", str(listener.port))
    out, evidence = certify(ws)
    assert "CERTIFIED" not in out.replace("NOT CERTIFIED", ""), out
    assert all(evidence[rid] for rid in ("TK-2", "TK-3", "TK-4", "TK-5")), evidence
    assert not evidence["TK-1"], evidence["TK-1"]  # its own, right slugify is measured as it is
    attacks = [heard for heard in listener.heard if heard["route"] == "siblings"]
    assert attacks, "the planted code never ran"  # the control: it did run inside plan's check
    assert all(heard["files"] == 0 for heard in attacks), attacks  # no report is a file any more
    if backend == "landlock":
        assert all(heard["pipes"] == 0 for heard in attacks), attacks  # a sibling's domain cannot open another's


def test_the_sibling_attack_reaches_pipes_outside_a_sandbox(tmp_path: Path, listener: Listener) -> None:
    """The control for route 1: the same code, run outside any sandbox beside a process of its workspace that holds
    a pipe (named like a test run, the only processes it aims at), finds and writes it."""
    workspace = tmp_path / "ws"
    (workspace / "state" / "tmp").mkdir(parents=True)
    (workspace / "banach.toml").write_text("")
    holder = subprocess.Popen([sys.executable, "-c", "import os, sys, time\nr, w = os.pipe()\nprint(r, flush=True)\n"
                               "time.sleep(30)\n", str(workspace / "testrun.py")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline()  # its pipe exists
        attack = ATTACKS.read_text().split("ATTACK = r\'\'\'", 1)[1].split("\'\'\'", 1)[0]
        code = attack.format(route="siblings", variant="", port=str(listener.port), known=[])
        (tmp_path / "attack.py").write_text(code.replace('if "_pytest" in _sys.modules:', "if True:"))
        subprocess.run([sys.executable, str(tmp_path / "attack.py")], check=True, timeout=60,
                       env={"PATH": os.environ["PATH"], "TMPDIR": str(workspace / "state" / "tmp")})
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 10
    while not listener.heard and time.monotonic() < deadline:
        time.sleep(0.05)
    assert listener.heard and listener.heard[0]["pipes"] > 0, listener.heard


# route 2 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["", "finished"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_forged_report_then_an_early_exit_is_no_keep(measured: Workspace, listener: Listener, backend: str,
                                                       variant: str) -> None:
    data = rolled_back(prepare(measured, backend), "exit", variant, "--port", str(listener.port))
    assert "measurement void" in str(data["excerpt"]), data["excerpt"]
    assert any(heard.get("written") for heard in listener.heard), listener.heard  # the control: it forged its channel


@pytest.mark.parametrize("jobs", [1, 4])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_forged_report_then_an_early_exit_is_never_certified(measured: Workspace, listener: Listener, backend: str,
                                                              jobs: int) -> None:
    ws = prepare(measured, backend, jobs)
    plant(ws, "exit", "finished", "--port", str(listener.port))
    out, evidence = certify(ws)
    assert "CERTIFIED" not in out.replace("NOT CERTIFIED", ""), out
    assert evidence["TK-1"] and "MEASUREMENT VOID for TK-1" in out, out


# route 3 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reporter_rewritten_through_gc_is_no_keep(measured: Workspace, listener: Listener, backend: str) -> None:
    data = rolled_back(prepare(measured, backend), "handle", "--port", str(listener.port))
    assert "canary tests, which must fail, were reported passing" in str(data["excerpt"]), data["excerpt"]
    assert any(heard.get("wrapped") for heard in listener.heard), listener.heard  # the control: it found the reporter


@pytest.mark.parametrize("jobs", [1, 4])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reporter_rewritten_through_gc_is_never_certified(measured: Workspace, listener: Listener, backend: str,
                                                            jobs: int) -> None:
    ws = prepare(measured, backend, jobs)
    plant(ws, "handle", "--port", str(listener.port))
    out, evidence = certify(ws)
    assert "CERTIFIED" not in out.replace("NOT CERTIFIED", "") and "MEASUREMENT VOID for TK-1" in out, out
    assert evidence["TK-1"]


# routes 4 and 5 -------------------------------------------------------------------------------------
@pytest.mark.parametrize("jobs", [1, 4])
@pytest.mark.parametrize("backend", BACKENDS)
def test_fifos_planted_by_a_check_do_not_wedge_plan(measured: Workspace, listener: Listener, backend: str,
                                                    jobs: int) -> None:
    ws = prepare(measured, backend, jobs)
    plant(ws, "fifo", "--port", str(listener.port))
    started = time.monotonic()
    out, evidence = certify(ws)  # raises TimeoutExpired past BUDGET
    assert time.monotonic() - started < BUDGET
    assert "CERTIFIED" not in out.replace("NOT CERTIFIED", "") and not evidence["TK-1"], out
    assert listener.heard, "the planted code never ran"


@pytest.mark.parametrize("backend", BACKENDS)
def test_fifos_planted_by_a_sensor_do_not_wedge_build(request: pytest.FixtureRequest, listener: Listener,
                                                      backend: str) -> None:
    """In textkit/__init__.py (TK-1 may write the whole tree here), so the example's own pytest sensor imports it too
    and turns its junit file into a FIFO at exit; build must read neither a FIFO nor wait for one."""
    ws: Workspace = request.getfixturevalue("wide" if backend == "none" else "wide_landlock")
    text = ws.config_file.read_text().replace('kind = "pytest"\n', 'kind = "pytest"\nnetwork = "open"  # to the listener\n')
    ws.config_file.write_text(text)
    started = time.monotonic()
    data = turn(ws, "fifo", "--into", "textkit/__init__.py", "--port", str(listener.port))
    assert time.monotonic() - started < BUDGET
    assert data["decision"] in ("keep", "rollback"), data
    assert pwned(ws) == []
    assert any(heard.get("junit") for heard in listener.heard), listener.heard  # the control: it saw the junit path


def test_build_loop_stops_on_sigterm_while_a_sensor_runs(measured: Workspace, tmp_path: Path) -> None:
    """Every blocking wait honours SIGTERM: build-loop asked to stop mid-measurement ends within seconds."""
    ws = prepare(measured, "none")
    config = ws.config_file.read_text()
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    os.chmod(gate, stat.S_IRUSR | stat.S_IWUSR)
    ws.config_file.write_text(config + f'\n[[build.sensors]]\nname = "waits"\ncommand = "cat {gate}"\ntimeout = 600\n')
    argv = [sys.executable, "-m", "build_loop", "once", "--workspace", str(ws.root), "--agent-command",
            f"{sys.executable} {HELPERS / 'agents' / 'good.py'}"]
    build = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    seen_waiting = False
    while time.monotonic() < deadline and not seen_waiting:
        seen_waiting = any("cat " + str(gate) in _cmdline(pid) for pid in _pids())
        time.sleep(0.1)
    assert seen_waiting, "the waiting sensor never started"
    build.terminate()
    try:
        build.wait(timeout=30)
    except subprocess.TimeoutExpired:
        build.kill()
        pytest.fail("build-loop ignored SIGTERM while a sensor ran")


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
