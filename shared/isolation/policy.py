"""OS-enforced write permissions: each role may write its row of the table in DESIGN.md, and nothing else.

Backends:
  landlock  the process restricts its own writes at start-up (kernel >= 5.13, unprivileged or root);
            children inherit the restriction and may be narrowed further (build's agent, plan's checks).
  users     one system account per role owns its stores; supervisord starts each program as its account.
  none      nothing is enforced, and every start-up line and `banach status` say so.
Reads are not restricted, with two exceptions under landlock: a role cannot read another role's receipt key,
and no role or agent can read the supervisor's credentials (or the config that holds them). The governor's
fence and ref guards are the second line behind this one.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from shared.errors import IsolationError
from shared.isolation.sandbox import LandlockMissing, restrict_writes
from shared.isolation.view import TURN_UID
from shared.workspace import ROLES, Role, Workspace

if TYPE_CHECKING:
    from shared.isolation.kinds import RunView


def writable_paths(ws: Workspace, role: Role) -> list[Path]:
    """The role's row of the table, and, for a loop that measures code, the machine's environment cache, where it may
    build the project's environment (shared/environment/cache.py; under the users backend, its account's folder)."""
    from shared.environment.cache import cache_root

    own = ws.role_dir(role)
    table: dict[str, list[Path]] = {
        "spec": [ws.canon, ws.inbox, own],
        "plan": [ws.plan_dir, own],
        "build": [ws.code, own],
        "monitor": [own],
    }
    return table[role] + ([cache_root(ws, role)] if role != "monitor" else [])


def hidden_paths(ws: Workspace, role: Role) -> list[Path]:
    """What a role may not read: the other roles' keys (a role signs only its own receipts), the model providers'
    keys (only build's gateway sends them) and the supervisor's credentials, with which any process could stop the
    other loops."""
    others = [ws.keys_dir / f"{other}.key" for other in ROLES if other != role]
    providers = [] if role == "build" else [ws.keys_dir / "providers"]
    return [*others, *providers, ws.supervisor_credentials, ws.supervisor_conf]


def held_back_places(ws: Workspace) -> list[Path]:
    """Where a held-back test (canon's held_back/), its name or its output can be found: canon's repository, the inbox
    (drafts, and the accepted and refused ones kept there), spec's and plan's scratch (their exports of canon), spec's
    object store (canon as a draft proposes it), edit and set-aside folders. No sandboxed child reads any of them:
    each gets its own export of what it needs."""
    spec, plan = ws.role_dir("spec"), ws.role_dir("plan")
    return [ws.canon, ws.inbox, spec / "scratch", spec / "objects.git", spec / "edit", spec / "set-aside", spec / "tmp",
            plan / "scratch"]


_applied: tuple[list[Path], list[Path]] | None = None  # the loop's own ruleset, for restrict_this_thread


def restrict_this_thread() -> None:
    """The loop's ruleset again, on the calling thread: for a thread the loop made before it restricted itself (a
    Landlock domain covers the thread that asked for it and what that thread starts later). Nothing without one."""
    if _applied is not None:
        restrict_writes(*_applied)


def landlock_restrict(paths: list[Path], hidden: list[Path] | None = None) -> int:
    global _applied
    _applied = (paths, hidden or [])
    try:
        return restrict_writes(paths, hidden or [])
    except LandlockMissing:
        raise IsolationError(
            "isolation.backend is 'landlock' but this kernel has no Landlock (needs Linux >= 5.13 with "
            "landlock in CONFIG_LSM). Use isolation.backend = 'users' (run 'banach setup-users' as root), or "
            "'none' to run without enforcement."
        ) from None


@dataclass(frozen=True)
class Enforcement:
    backend: str
    active: bool
    detail: str

    def banner(self, program: str) -> str:
        if self.backend == "none":
            return f"{program}: WARNING: isolation backend 'none': NOTHING IS ENFORCED; any process may write anywhere"
        return f"{program}: isolation {self.backend}: {self.detail}"


def cgroup_parents() -> tuple[Path, ...]:
    """The `banach` cgroups under which build and plan make one cgroup per agent turn or check pass. The loop keeps
    them writable for itself; the children it sandboxes do not get them, so none can move itself out."""
    from shared.cgroups import layout

    found = layout()  # creates the parents (and sweeps runs a killed loop left) while we still may
    return tuple(path for path in (found.v2, *(base for _, base in found.v1)) if path is not None)


def restrict_self(ws: Workspace, role: Role, *, agent_state: tuple[Path, ...] = ()) -> Enforcement:
    """Called first thing by each loop, before any thread starts. agent_state: where build's agent CLIs keep
    their own state; build keeps it writable only so that its agents inherit it."""
    from shared.isolation.sandbox import not_dumpable

    not_dumpable()  # whatever the backend: no child of the same user opens this loop's descriptors through /proc
    start_views(ws, role)
    backend = ws.config.isolation.backend
    paths = writable_paths(ws, role)
    for path in paths:
        if backend == "users" and not path.is_relative_to(ws.root):
            continue  # the environment cache's folder: setup-users makes it, owned by the role's account
        path.mkdir(parents=True, exist_ok=True)
    scratch = ws.role_dir(role) / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    os.environ["TMPDIR"] = str(scratch)
    import tempfile

    tempfile.tempdir = str(scratch)
    shown = ", ".join(ws.relative(p) for p in paths)
    if backend == "none":
        return Enforcement("none", False, "nothing is enforced")
    if backend == "users":
        from shared.isolation.users import check_running_as

        name = check_running_as(ws, role)
        return Enforcement("users", True, f"running as account {name}; writes limited by ownership to {shown}")
    from shared.journal import load_or_create_key

    # Read rules are given to what exists now: the role's own key must exist before it is the only one left
    # readable, and every role's folder too, so that a peer's journal created later can still be anchored.
    load_or_create_key(ws.keys_dir / f"{role}.key")
    for other in ROLES:
        ws.role_dir(other).mkdir(parents=True, exist_ok=True)
    cgroups = cgroup_parents() if role in ("build", "plan", "spec") else ()  # spec's dry run builds environments too
    # A check cut off the network (sandbox --offline) started by an ordinary user maps its user namespace's ids by
    # writing /proc/self/uid_map, under every Landlock layer above it; its own layer then allows no /proc write.
    proc = [Path("/proc")] if os.geteuid() != 0 and role in ("spec", "plan", "build") else []
    abi = landlock_restrict([*paths, *agent_state, *cgroups, *proc], hidden_paths(ws, role))
    extra = f"; the agent CLIs' own state: {', '.join(map(str, agent_state))}" if agent_state else ""
    if cgroups:
        extra += f"; its run cgroups under {', '.join(map(str, cgroups))}"
    elif role in ("build", "plan", "spec"):
        from shared.cgroups import containment_available

        extra += (f"; NO run cgroups ({containment_available() or 'none could be made'}): a turn's processes are ended "
                  "by process group only, and process and memory limits are not enforced")
    return Enforcement("landlock", True, f"Landlock ABI {abi}: writes limited to {shown}{extra}; "
                                         "other roles' keys and the supervisor credentials unreadable")


def sandbox_flags(ws: Workspace, writable: list[Path], hidden: list[Path] | None = None) -> list[str] | None:
    """The Landlock wrapper's flags for a child writing only `writable`, the keys, the supervisor's credentials, the
    places of held-back tests (but the one it works in: plan's and spec's check runners write in their scratch) and
    `hidden` unreadable; None without Landlock."""
    if ws.config.isolation.backend != "landlock":
        return None
    # The whole supervisor folder: the agent needs none of it, and its config holds the socket's password.
    flags = ["--hide", str(ws.keys_dir), "--hide", str(ws.supervisor_dir)]
    held = [place for place in held_back_places(ws) if not any(path.is_relative_to(place) for path in writable)]
    for path in [*held, *(hidden or [])]:
        flags += ["--hide", str(path)]
    for path in writable:
        flags += ["--write", str(path)]
    return flags


def start_views(ws: Workspace, role: Role) -> None:
    """For a loop that runs agent-written code (spec, plan, build), where every such run gets a view: refuse when no
    view can be made here, and start the thread that makes them (shared/isolation/launcher.py). Call it while the loop
    has one thread, before it restricts itself; restrict_self does, and a second call does nothing."""
    from shared.isolation import launcher
    from shared.isolation.kinds import views_on

    if role in ("spec", "plan", "build") and views_on(ws) and not launcher.started():
        refuse_without_views(ws)
        launcher.start()  # a view is made of mounts, which the loop may not make once it restricts itself


def refuse_without_views(ws: Workspace) -> None:
    """Raise, naming what is missing, when no run can get its view here (a real run of /bin/true in one)."""
    from shared.isolation.view import probe

    why = probe(str(ws.code))
    if why:
        raise IsolationError(f"isolation.reach is 'turn', but no run of agent-written code can get a view of its own "
                             f"here: {why}. Fix that (banach doctor says what this machine has), or set isolation.reach = "
                             f"'machine' in {ws.root / 'banach.toml'} to let turns, sensors and checks read the whole "
                             "machine; every start-up line then says so")


def reach_line(ws: Workspace) -> str:
    """What a turn reaches, as every start-up line and `banach status` say it."""
    if ws.config.isolation.backend == "none" or ws.config.isolation.reach == "machine":
        return ("WEAKER MODE: a turn reads the whole machine and sees every process (isolation.reach = 'machine'"
                + (", backend 'none'" if ws.config.isolation.backend == "none" else "") + ")")
    who = f"uid {TURN_UID} (nobody)" if os.geteuid() == 0 else "your own uid"
    network = ("the MACHINE'S NETWORK (gateway.network = 'open')" if ws.config.gateway.network == "open"
               else "no network but the model gateway (none for an agent without one)")
    return f"a turn sees its own view (work tree, canon, toolchains, a fresh HOME), its own processes, runs as {who}, {network}"


def sandbox_argv(ws: Workspace, argv: tuple[str, ...], writable: list[Path], *, hidden: list[Path] | None = None,
                 gateway_relay: tuple[Path, int] | None = None,
                 connect_ports: tuple[int, ...] | None = None, view: RunView | None = None,
                 offline: bool = False) -> tuple[str, ...]:
    """Wrap a child's argv so that it runs with writes narrowed to `writable`, the receipt keys unreadable, and no
    signals or abstract unix sockets to processes outside where the kernel has scopes (landlock backend only).
    Isolated mode (-I): neither the child's cwd (the work tree) nor PYTHONPATH can put a module before the wrapper's.

    connect_ports: TCP connects only to these ports, where the kernel has Landlock network rules.
    offline: a network namespace of its own where only its loopback answers (a sensor whose requirement does not say
    `network: open`).
    gateway_relay (socket, port): the gateway-only network, where 127.0.0.1:port is the gateway's unix socket and
    nothing else is reachable (shared/isolation/netrelay.py). It needs the wrapper, so another backend is refused for it."""
    from shared.isolation.sandbox import landlock_features

    flags = sandbox_flags(ws, writable, hidden)
    if view is not None:
        if flags is None:  # the users backend: its accounts limit writes; the view is still given
            flags = ["--no-landlock", *(flag for path in writable for flag in ("--write", str(path)))]
        flags += ["--view", *(flag for path in view.read for flag in ("--read", str(path)))]
        if view.home is not None:
            flags += ["--home", str(view.home), "--home-path", str(Path.home())]
        if view.open_network:
            flags.append("--host-network")
            gateway_relay = None
    if flags is None:
        if gateway_relay is not None:
            raise IsolationError(f"the gateway-only network is made by the Landlock wrapper, but isolation.backend is "
                                 f"'{ws.config.isolation.backend}' in {ws.root / 'banach.toml'}: set it to 'landlock', "
                                 "or leave the agent's network open")
        return argv
    if gateway_relay is not None:
        socket_path, port = gateway_relay
        flags += ["--gateway-relay", f"{socket_path}:{port}"]
    elif offline and view is None:  # a view makes its own network
        flags.append("--offline")
    if connect_ports is not None and landlock_features()["net"]:  # TCP to these ports only (any address)
        flags += [flag for port in connect_ports for flag in ("--connect-port", str(port))]
    return wrapped(flags, argv)


def wrapped(flags: list[str], argv: tuple[str, ...]) -> tuple[str, ...]:
    """argv run through the Landlock wrapper with these flags, scoped (no signals or abstract sockets out) where the
    kernel can. Isolated mode (-I): neither the child's cwd (the work tree) nor PYTHONPATH can put a module first."""
    from shared.isolation.sandbox import landlock_features

    scope = ["--scope"] if landlock_features()["scopes"] else []
    return (sys.executable, "-I", "-m", "shared.isolation.sandbox", *flags, *scope, "--", *argv)
