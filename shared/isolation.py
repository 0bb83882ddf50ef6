"""OS-enforced write permissions: each role may write its row of the table in DESIGN.md, and nothing else.

Backends:
  landlock  the process restricts its own writes at start-up (kernel >= 5.13, unprivileged or root);
            children inherit the restriction and may be narrowed further (build's agent, plan's checks).
  users     one system account per role owns its stores; supervisord starts each program as its account.
  none      nothing is enforced, and every start-up line and `banach status` say so.
Reads are not restricted; the governor's fence and ref guards are the second line behind this one.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from shared.errors import IsolationError
from shared.sandbox import LandlockMissing, restrict_writes
from shared.workspace import Role, Workspace


def writable_paths(ws: Workspace, role: Role) -> list[Path]:
    own = ws.role_dir(role)
    table: dict[str, list[Path]] = {
        "spec": [ws.canon, ws.inbox, own],
        "plan": [ws.plan_dir, own],
        "build": [ws.code, own],
        "monitor": [own],
    }
    return table[role]


def landlock_restrict(paths: list[Path]) -> int:
    try:
        return restrict_writes(paths)
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


def restrict_self(ws: Workspace, role: Role, *, agent_state: tuple[Path, ...] = ()) -> Enforcement:
    """Called first thing by each loop, before any thread starts. agent_state: where build's agent CLIs keep
    their own state; build keeps it writable only so that its agents inherit it."""
    backend = ws.config.isolation.backend
    paths = writable_paths(ws, role)
    for path in paths:
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
        from shared.users import check_running_as

        name = check_running_as(ws, role)
        return Enforcement("users", True, f"running as account {name}; writes limited by ownership to {shown}")
    abi = landlock_restrict([*paths, *agent_state])
    extra = f"; the agent CLIs' own state: {', '.join(map(str, agent_state))}" if agent_state else ""
    return Enforcement("landlock", True, f"Landlock ABI {abi}: writes limited to {shown}{extra}")


def sandbox_flags(ws: Workspace, writable: list[Path]) -> list[str] | None:
    """The Landlock wrapper's flags for a child writing only `writable`, the keys hidden; None without Landlock."""
    if ws.config.isolation.backend != "landlock":
        return None
    flags = ["--hide", str(ws.keys_dir)]
    for path in writable:
        flags += ["--write", str(path)]
    return flags


def sandbox_argv(ws: Workspace, argv: tuple[str, ...], writable: list[Path]) -> tuple[str, ...]:
    """Wrap a child's argv so that it runs with writes narrowed to `writable` and the receipt keys
    unreadable (landlock backend only)."""
    flags = sandbox_flags(ws, writable)
    if flags is None:
        return argv
    return (sys.executable, "-m", "shared.sandbox", *flags, "--", *argv)
