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


def in_folder(root: Path) -> list[int]:
    """Live processes whose working folder is root or beneath it: what a workspace may not keep once it is down."""
    inside = str(root.resolve())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd").removesuffix(" (deleted)")
        except OSError:  # gone, or not ours to read
            continue
        if (cwd == inside or cwd.startswith(inside + "/")) and alive(int(entry)):
            found.append(int(entry))
    return found


def describe(pids: list[int]) -> str:
    """Each pid with its command line, for a failing assertion."""
    lines = []
    for pid in pids:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            command = "(gone)"
        lines.append(f"{pid}: {command}")
    return "\n".join(lines)


def wait_all_gone(pids: list[int], timeout: float) -> dict[int, float]:
    """Wait for processes that are not our children to end; pid -> seconds until it was seen gone (pidfds, no polling).
    A pid missing from the answer outlived the timeout."""
    import select
    import time

    began = time.monotonic()
    handles: dict[int, int] = {}
    ended: dict[int, float] = {}
    for pid in pids:
        try:
            handles[os.pidfd_open(pid)] = pid
        except ProcessLookupError:
            ended[pid] = 0.0
    try:
        while len(ended) < len(pids):
            remaining = began + timeout - time.monotonic()
            if remaining <= 0:
                break
            ready, _, _ = select.select([fd for fd, pid in handles.items() if pid not in ended], [], [], remaining)
            for fd in ready:
                ended[handles[fd]] = time.monotonic() - began
    finally:
        for fd in handles:
            os.close(fd)
    return ended


def kill_tree(root: int) -> list[int]:
    """A power cut for one process tree: SIGSTOP root and its descendants until no new one appears (nothing stopped can
    react or fork), then SIGKILL them all, and wait until they are gone. Returns the pids killed."""
    import signal

    stopped: set[int] = set()
    while True:
        found = ({root} if alive(root) else set()) | set(live_descendants(root))
        new = found - stopped
        if not new:
            break
        for pid in new:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        stopped |= new
    for pid in stopped:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_all_gone(sorted(stopped), 30)
    return sorted(stopped)
