"""Find processes a test left behind: our live descendants (zombies excluded)."""
from __future__ import annotations

import os
from pathlib import Path


def _stat(pid: int) -> tuple[str, int] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    return fields[0], int(fields[1])


def live_descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    states: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat:
                states[int(entry)], parents[int(entry)] = stat
    found = []
    for pid, parent in parents.items():
        cursor, seen = parent, 0
        while cursor and cursor != root and seen < 64:
            cursor, seen = parents.get(cursor, 0), seen + 1
        if cursor == root and states.get(pid) not in ("Z", "X"):
            found.append(pid)
    return found


def pid_of(marker: str, wait: float = 0.0) -> int:
    """The host pid of the process whose command line holds marker (one in a PID namespace knows only its own);
    wait: seconds to look again while it is not there yet (a process between its fork and its exec)."""
    import time

    deadline = time.monotonic() + wait
    while True:
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                    return int(entry.name)
            except OSError:
                continue
        if time.monotonic() >= deadline:
            return 0  # gone: no process of that pid is alive
        time.sleep(0.05)


def alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    """Wait for a process that is not our child to end (pidfd: woken by its exit, no polling)."""
    import select

    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout)
        return bool(ready) or not alive(pid)
    finally:
        os.close(pidfd)


def run_cgroups(cgroup_text: str) -> list[str]:
    """The run cgroups (".../banach/run-...") named in a /proc/PID/cgroup dump."""
    return [line.split(":", 2)[2] for line in cgroup_text.splitlines() if "/banach/run-" in line]
