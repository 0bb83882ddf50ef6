"""The loops of a workspace as processes, found by their locks (shared/role_lock.py), never by process names.

Whoever started a loop (supervisord, systemd, a person in a terminal, `banach run`, a supervisord that has since
died), it holds its role's lock while it runs, and the kernel names its pid. `find` reads the three locks and says
what each holder runs under: this workspace's supervisord (its program, or a descendant such as the dashboard's
`plan-loop once`), a systemd unit `banach export` wrote, or nothing we manage: outside. `stop` ends loops as
supervisord does: SIGTERM, a clean stop's time, then SIGKILL to the loop's process group.

`banach status` shows them, `banach down` stops them all (but systemd's, which systemctl stops), and `banach up`
stops those outside before it starts anything, so a workspace never runs two of a role.
"""
from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from shared.role_lock import Holder, holder
from shared.workspace import LOOP_ROLES, Workspace

STOP_WAIT = 40.0  # seconds for a clean stop (a loop escalates itself after 30 when its supervisor is gone)
KILL_WAIT = 10.0
SUPERVISORD = "supervisord"
_UNIT = re.compile(r"banach-(spec|plan|build)\.service")


@dataclass(frozen=True)
class Loop:
    holder: Holder
    under: str  # "supervisord", "systemd unit banach-build.service", or "" (outside anything that manages it)

    @property
    def role(self) -> str:
        return self.holder.role

    @property
    def pid(self) -> int:
        return self.holder.pid

    @property
    def outside(self) -> bool:
        return not self.under

    def describe(self) -> str:
        return self.holder.describe() + (f" under {self.under}" if self.under else "")

    def as_json(self) -> dict[str, object]:
        return {"pid": self.pid, "command": self.holder.command, "since": self.holder.started,
                "under": self.under or "outside", "one_shot": self.holder.one_shot}


def find(ws: Workspace, supervisord: int | None = None, supervised: Sequence[int] = ()) -> list[Loop]:
    """Every role's lock holder. supervisord: the pid of this workspace's running supervisord; supervised: the pids
    of its programs."""
    found = []
    for role in LOOP_ROLES:
        held = holder(ws, role)
        if held is None:
            continue
        if not held.command:  # it holds the lock and has not described itself yet
            held = Holder(held.role, held.pid, _command_line(held.pid), held.started)
        found.append(Loop(held, _under(held.pid, supervisord, supervised)))
    return found


def _under(pid: int, supervisord: int | None, supervised: Sequence[int]) -> str:
    if pid and (pid in supervised or (supervisord and _descends(pid, supervisord))):
        return SUPERVISORD
    unit = _systemd_unit(pid)
    return f"systemd unit {unit}" if unit else ""


def _parent(pid: int) -> int:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(raw[raw.rfind(")") + 2:].split()[1])


def _descends(pid: int, ancestor: int) -> bool:
    for _ in range(64):
        pid = _parent(pid)
        if pid in (0, 1):
            return False
        if pid == ancestor:
            return True
    return False


def _systemd_unit(pid: int) -> str:
    """The unit `banach export systemd` wrote that the process runs in, from its cgroup, or ""."""
    try:
        text = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return ""
    for line in text.splitlines():
        for part in line.split(":", 2)[-1].split("/"):
            if _UNIT.fullmatch(part):
                return part
    return ""


def _command_line(pid: int) -> str:
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    return " ".join(word.decode(errors="replace") for word in words if word)[:200]


def stop(loops: Sequence[Loop], *, wait: float = STOP_WAIT) -> dict[int, str]:
    """SIGTERM to each, up to `wait` seconds for all to end (each finishes or abandons its step, journaled), then
    SIGKILL to the process group of any left (its own group, as supervisord makes one per program; else the process).
    Returns pid -> "stopped", "killed" or "gone" (it had ended already)."""
    handles: dict[int, int] = {}
    ended: dict[int, str] = {}
    for loop in loops:
        if not loop.pid:  # in a pid namespace this process cannot see: nothing to signal
            continue
        try:
            handles[loop.pid] = os.pidfd_open(loop.pid)
            os.kill(loop.pid, signal.SIGTERM)
        except ProcessLookupError:
            ended[loop.pid] = "gone"
    try:
        for pid in _wait(handles, wait):
            ended[pid] = "stopped"
        for pid in set(handles) - set(ended):
            with contextlib.suppress(ProcessLookupError):
                if os.getpgid(pid) == pid:
                    os.killpg(pid, signal.SIGKILL)
                os.kill(pid, signal.SIGKILL)
            ended[pid] = "killed"
        _wait({pid: handles[pid] for pid, how in ended.items() if how == "killed"}, KILL_WAIT)
    finally:
        for handle in handles.values():
            os.close(handle)
    return ended


def _wait(handles: dict[int, int], seconds: float) -> set[int]:
    """The pids whose pidfd turned readable (the process ended) within `seconds`."""
    deadline = time.monotonic() + seconds
    done: set[int] = set()
    while len(done) < len(handles):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        ready, _, _ = select.select([fd for pid, fd in handles.items() if pid not in done], [], [], remaining)
        done |= {pid for pid, fd in handles.items() if fd in ready}
    return done
