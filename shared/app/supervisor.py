"""The three loops under supervisord: render its config from a template, start, stop, ask for states.

`banach up` renders state/supervisor/supervisord.conf (the workspace referred to through %(here)s)
and starts supervisord; `supervisorctl -c state/supervisor/supervisord.conf` works against it, and
`banach ctl ...` runs exactly that from any folder inside the workspace.

The socket asks for a username and password, made once per workspace into state/supervisor/credentials
(mode 0600) and copied into the config (mode 0600), because file modes alone do not keep out a process
running as the same user (or root): the agent could otherwise stop the plan loop. Neither file is
readable inside a role's or the agent's Landlock sandbox (shared/isolation/policy.py).
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import xmlrpc.client
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.app import loops
from shared.atomic import write_text
from shared.cgroups import sweep_beside
from shared.errors import SupervisorError
from shared.provider_keys import keep_keys_out_of_environment
from shared.socket_path import address, forget
from shared.workspace import LOOP_ROLES, Workspace

EXECUTABLES = {"spec": "spec_loop", "plan": "plan_loop", "build": "build_loop"}
SOCKET = "supervisor.sock"  # in state/supervisor; bound and reached through a short link when that path is too deep


@dataclass(frozen=True)
class ProgramState:
    role: str
    state: str
    pid: int | None
    description: str


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str


def credentials_path(ws: Workspace) -> Path:
    return ws.supervisor_credentials


def credentials(ws: Workspace) -> Credentials:
    """The socket's username and password, created on first use with mode 0600."""
    path = credentials_path(ws)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # token_urlsafe has no '%', which supervisord's config would read as an expansion.
        made = {"username": "banach", "password": secrets.token_urlsafe(32)}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mkstemp creates it 0600
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(made, handle)
            with contextlib.suppress(FileExistsError):  # another `banach` made them first: use theirs
                os.link(tmp, path)
        finally:
            os.unlink(tmp)
    try:
        value = json.loads(path.read_text())
        return Credentials(str(value["username"]), str(value["password"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SupervisorError(f"{ws.relative(path)} cannot be read as the supervisor's credentials ({exc}). Stop "
                              "supervisord if it runs, delete the file, and run 'banach up' to make new ones") from None


def render_config(ws: Workspace, *, foreground: bool = False, users: dict[str, str] | None = None) -> Path:
    import jinja2

    here = ws.supervisor_dir
    here.mkdir(parents=True, exist_ok=True)
    workspace_from_here = os.path.relpath(ws.root, here)
    programs = []
    for role in LOOP_ROLES:
        command = f"{sys.executable} -I -u -m {EXECUTABLES[role]} run --workspace ."
        programs.append({"role": role, "command": command, "user": (users or {}).get(role, "")})
    if ws.config.serve.enabled:  # the dashboard: it reads the stores and asks the loops' executables to act
        programs.append({"role": "serve", "command": f"{sys.executable} -I -u -m shared serve --workspace .", "user": ""})
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    login = credentials(ws)
    bound = address(here, SOCKET)
    socket = "%(here)s/" + SOCKET if bound == here / SOCKET else str(bound).replace("%", "%%")
    text = env.get_template("supervisord.conf.j2").render(
        programs=programs, workspace_from_here=workspace_from_here, foreground=foreground, socket=socket,
        conf_name=ws.relative(ws.supervisor_conf), user=bool(users), username=login.username,
        password=login.password)
    write_text(ws.supervisor_conf, text, private=True)  # it holds the password
    return ws.supervisor_conf


def _proxy(ws: Workspace) -> xmlrpc.client.ServerProxy:
    from supervisor.xmlrpc import SupervisorTransport

    login = credentials(ws)
    transport = SupervisorTransport(login.username, login.password, f"unix://{address(ws.supervisor_dir, SOCKET)}")
    return xmlrpc.client.ServerProxy("http://127.0.0.1", transport=transport)


def running(ws: Workspace) -> bool:
    if not (ws.supervisor_dir / SOCKET).exists():
        return False
    try:
        state: dict[str, Any] = _proxy(ws).supervisor.getState()  # type: ignore[assignment]
        return state["statename"] == "RUNNING"
    except xmlrpc.client.ProtocolError as exc:
        if exc.errcode == 401:  # up() would otherwise take its socket for a stale one and start a second one
            raise SupervisorError(
                f"supervisord is running on {ws.relative(ws.supervisor_dir / SOCKET)} but refuses the "
                f"credentials in {ws.relative(credentials_path(ws))}; it was started with others. Stop it "
                f"(kill the pid in {ws.relative(ws.supervisor_dir / 'supervisord.pid')}) and run 'banach up'") from None
        return False
    except (OSError, xmlrpc.client.Fault):
        return False


def states(ws: Workspace) -> list[ProgramState]:
    if not running(ws):
        return []
    infos: list[dict[str, Any]] = _proxy(ws).supervisor.getAllProcessInfo()  # type: ignore[assignment]
    return [ProgramState(i["name"], i["statename"], i["pid"] or None, i["description"]) for i in infos]


def stop_program(ws: Workspace, name: str) -> None:
    """Stop one program and wait for it (SIGTERM to its group); one already stopped stays so."""
    with contextlib.suppress(xmlrpc.client.Fault):
        _proxy(ws).supervisor.stopProcess(name, True)


def start_program(ws: Workspace, name: str) -> None:
    with contextlib.suppress(xmlrpc.client.Fault):  # already running
        _proxy(ws).supervisor.startProcess(name, True)


def _pid_file(ws: Workspace) -> int | None:
    try:
        return int((ws.supervisor_dir / "supervisord.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def running_loops(ws: Workspace, programs: list[ProgramState] | None = None) -> list[loops.Loop]:
    """Every loop of the workspace (by its lock), with what it runs under; programs: states(ws), when read already."""
    programs = states(ws) if programs is None else programs
    return loops.find(ws, _pid_file(ws) if programs else None, [p.pid for p in programs if p.pid])


def _make_way(ws: Workspace, found: list[loops.Loop], say: Callable[[str], None]) -> None:
    """Before `up` starts anything: stop the loops that run outside any supervisor; refuse for systemd's and for a
    one-shot command (a person's, or `banach run`'s), which ends by itself."""
    outside = [loop for loop in found if loop.under != loops.SUPERVISORD]
    units = [loop for loop in outside if loop.under]
    if units:
        raise SupervisorError(
            f"this workspace's loops run under systemd ({'; '.join(loop.describe() for loop in units)}); 'banach up' "
            "starts no second set. Manage them with systemctl, or stop the units (systemctl stop "
            f"{' '.join(loop.under.removeprefix('systemd unit ') for loop in units)}) to run them under 'banach up'")
    one_shots = [loop for loop in outside if loop.holder.one_shot]
    if one_shots:
        raise SupervisorError(
            f"{'; '.join(loop.describe() for loop in one_shots)} is running in the workspace {ws.root}; 'banach up' "
            f"starts the loops once it has ended, or stop it first (banach down -w {ws.root} stops it)")
    ended = loops.stop(outside)
    for loop in outside:
        say(f"banach up: {ended.get(loop.pid, 'gone')}: {loop.describe()}, which ran outside the supervisor")


def up(ws: Workspace, *, users: dict[str, str] | None = None, wait: float = 20.0,
       echo: Callable[[str], None] | None = None) -> list[ProgramState]:
    """Start supervisord and the loops, never a second set: loops of the workspace running outside a supervisor (one
    whose supervisord died, one started by hand) are stopped first. With supervisord running already, those outside
    are stopped and a program that gave up (FATAL, for instance because one of them held its lock) is started again."""
    say = echo or (lambda _line: None)
    if running(ws):
        _make_way(ws, running_loops(ws), say)
        for program in states(ws):
            if program.state == "FATAL":
                start_program(ws, program.role)
        return states(ws)
    _make_way(ws, running_loops(ws), say)
    if users is None and ws.config.isolation.backend == "users":
        from shared.isolation.users import supervisor_users

        if os.geteuid() != 0:
            raise SupervisorError("isolation backend 'users': 'banach up' must run as root, so supervisord can start "
                                  "each loop as its account")
        users = supervisor_users(ws)
    conf = render_config(ws, users=users)
    stale = ws.supervisor_dir / SOCKET
    stale.unlink(missing_ok=True)
    # a provider key in this environment would sit in supervisord's and every loop's /proc/PID/environ, which an agent
    # of the same user can read: it goes to its key file instead
    env, moved = keep_keys_out_of_environment(ws)
    for what in moved:
        say(f"banach up: stored the provider key {what}; supervisord and the loops start without the variable")
    result = subprocess.run([sys.executable, "-c", "from supervisor.supervisord import main; main()", "-c", str(conf)],
                            capture_output=True, text=True, cwd=ws.supervisor_dir, timeout=60, env=env)
    if result.returncode != 0:
        raise SupervisorError(f"supervisord did not start (exit {result.returncode}):\n{result.stdout}{result.stderr}"
                              f"\nSee {ws.relative(ws.supervisor_dir / 'supervisord.log')}")
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        current = states(ws)
        if current and all(p.state in ("RUNNING", "BACKOFF", "FATAL", "EXITED") for p in current):
            return current
        time.sleep(0.2)
    raise SupervisorError(f"supervisord started but its programs did not come up within {wait:g}s; "
                          f"see the logs in {ws.relative(ws.supervisor_dir)}")


@dataclass(frozen=True)
class Down:
    supervisord: bool  # it was running, and is stopped
    stopped: tuple[str, ...]  # the loops stopped outside it, each described with how it ended
    left: tuple[str, ...]  # the loops left running: systemd's, which systemctl stops

    def summary(self) -> str:
        lines = ["stopped supervisord and its programs" if self.supervisord else "supervisor was not running"]
        lines += [f"stopped {what}, which ran outside the supervisor" for what in self.stopped]
        if not self.supervisord and not self.stopped:
            lines = ["nothing of the workspace was running"]
        return "\n".join(lines)

    def refuse_left(self) -> None:
        if self.left:
            raise SupervisorError(f"left running under systemd: {'; '.join(self.left)}. banach down does not stop "
                                  "systemd's units; stop them with systemctl stop banach-spec banach-plan banach-build")


def down(ws: Workspace, *, wait: float = 60.0) -> Down:
    """Stop every program (SIGTERM, then supervisord escalates) and supervisord itself, then every loop of the
    workspace still holding its lock outside any supervisor (an orphan of a supervisord that died, one started by
    hand, a one-shot command); then kill the run cgroups the killed ones left. systemd's loops are left, named."""
    up_now = running(ws)
    supervisord = _pid_file(ws) if up_now else None
    # read now, while they live: the folders where their runs' cgroups are
    beside = [pid for pid in (supervisord, *(loop.pid for loop in running_loops(ws)), os.getpid()) if pid]
    if up_now:
        try:
            _proxy(ws).supervisor.shutdown()
        except (OSError, xmlrpc.client.Fault):
            pass
        deadline = time.monotonic() + wait
        while supervisord and _alive(supervisord):
            if time.monotonic() >= deadline:
                raise SupervisorError(f"supervisord (pid {supervisord}) did not stop within {wait:g}s")
            time.sleep(0.1)
        forget(ws.supervisor_dir, SOCKET)
    found = loops.find(ws)
    outside = [loop for loop in found if not loop.under]
    ended = loops.stop(outside)
    sweep_beside(beside)
    return Down(up_now, tuple(f"{loop.describe()} ({ended.get(loop.pid, 'gone')})" for loop in outside),
                tuple(loop.describe() for loop in found if loop.under))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def log_file(ws: Workspace, role: str) -> Path:
    return ws.supervisor_dir / f"{role}.log"


def supervisorctl(ws: Workspace, arguments: list[str]) -> int:
    """Run supervisorctl against this workspace's supervisord (its config holds the socket and credentials), with
    the terminal; returns its exit code."""
    if not ws.supervisor_conf.is_file() or not running(ws):
        raise SupervisorError(f"supervisord is not running for the workspace {ws.root} (there is nothing for "
                              f"supervisorctl to talk to). Start the loops with 'banach up -w {ws.root}'")
    argv = [sys.executable, "-c", "from supervisor.supervisorctl import main; main()", "-c", str(ws.supervisor_conf),
            *arguments]
    return subprocess.call(argv, cwd=ws.supervisor_dir)
