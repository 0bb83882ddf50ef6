"""The three loops under supervisord: render its config from a template, start, stop, ask for states.

`banach up` renders state/supervisor/supervisord.conf (the workspace referred to through %(here)s)
and starts supervisord; `supervisorctl -c state/supervisor/supervisord.conf` works against it."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import xmlrpc.client
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from shared.errors import SupervisorError
from shared.workspace import LOOP_ROLES, Workspace

EXECUTABLES = {"spec": "spec_loop", "plan": "plan_loop", "build": "build_loop"}


@dataclass(frozen=True)
class ProgramState:
    role: str
    state: str
    pid: int | None
    description: str


def render_config(ws: Workspace, *, foreground: bool = False, users: dict[str, str] | None = None) -> Path:
    here = ws.supervisor_dir
    here.mkdir(parents=True, exist_ok=True)
    workspace_from_here = os.path.relpath(ws.root, here)
    programs = []
    for role in LOOP_ROLES:
        command = f"{sys.executable} -m {EXECUTABLES[role]} run --workspace ."
        programs.append({"role": role, "command": command, "user": (users or {}).get(role, "")})
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    text = env.get_template("supervisord.conf.j2").render(
        programs=programs, workspace_from_here=workspace_from_here, foreground=foreground,
        conf_name=ws.relative(ws.supervisor_conf), user=bool(users))
    ws.supervisor_conf.write_text(text)
    return ws.supervisor_conf


def _proxy(ws: Workspace) -> xmlrpc.client.ServerProxy:
    from supervisor.xmlrpc import SupervisorTransport

    socket = ws.supervisor_dir / "supervisor.sock"
    transport = SupervisorTransport(None, None, f"unix://{socket}")
    return xmlrpc.client.ServerProxy("http://127.0.0.1", transport=transport)


def running(ws: Workspace) -> bool:
    if not (ws.supervisor_dir / "supervisor.sock").exists():
        return False
    try:
        state: dict[str, Any] = _proxy(ws).supervisor.getState()  # type: ignore[assignment]
        return state["statename"] == "RUNNING"
    except (OSError, xmlrpc.client.Fault, xmlrpc.client.ProtocolError):
        return False


def states(ws: Workspace) -> list[ProgramState]:
    if not running(ws):
        return []
    infos: list[dict[str, Any]] = _proxy(ws).supervisor.getAllProcessInfo()  # type: ignore[assignment]
    return [ProgramState(i["name"], i["statename"], i["pid"] or None, i["description"]) for i in infos]


def up(ws: Workspace, *, users: dict[str, str] | None = None, wait: float = 20.0) -> list[ProgramState]:
    if running(ws):
        return states(ws)
    if users is None and ws.config.isolation.backend == "users":
        from shared.users import supervisor_users

        if os.geteuid() != 0:
            raise SupervisorError("isolation backend 'users': 'banach up' must run as root, so supervisord can start "
                                  "each loop as its account")
        users = supervisor_users(ws)
    conf = render_config(ws, users=users)
    stale = ws.supervisor_dir / "supervisor.sock"
    stale.unlink(missing_ok=True)
    result = subprocess.run([sys.executable, "-c", "from supervisor.supervisord import main; main()", "-c", str(conf)],
                            capture_output=True, text=True, cwd=ws.supervisor_dir, timeout=60)
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


def down(ws: Workspace, *, wait: float = 60.0) -> bool:
    """Stop every program (SIGTERM, then supervisord escalates) and supervisord itself. True if it was up."""
    if not running(ws):
        return False
    pid_file = ws.supervisor_dir / "supervisord.pid"
    pid = int(pid_file.read_text().strip()) if pid_file.exists() else None
    try:
        _proxy(ws).supervisor.shutdown()
    except (OSError, xmlrpc.client.Fault):
        pass
    deadline = time.monotonic() + wait
    while pid and _alive(pid):
        if time.monotonic() >= deadline:
            raise SupervisorError(f"supervisord (pid {pid}) did not stop within {wait:g}s")
        time.sleep(0.1)
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def log_file(ws: Workspace, role: str) -> Path:
    return ws.supervisor_dir / f"{role}.log"
