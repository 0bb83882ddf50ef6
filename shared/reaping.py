"""Stopping what a child started, without a cgroup: its process group, every process carrying the run's reap tag in
its environment (which catches children that moved to a new session), and the zombies re-parented to a child
subreaper. shared/process.py uses it where no cgroup can be made, and for children run without limits."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

REAP_TAG = "BANACH_REAP_TAG"


def _proc_stat(pid: str) -> tuple[str, int] | None:
    """(state, process group) of a live process, or None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    return fields[0], int(fields[2])


def _members(pgid: int, tag: str) -> set[int]:
    """Live processes in the group or carrying the tag (zombies are already dead)."""
    found: set[int] = set()
    needle = f"{REAP_TAG}={tag}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        stat = _proc_stat(entry)
        if stat is None or stat[0] in ("Z", "X"):
            continue
        if stat[1] == pgid:
            found.add(int(entry))
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.add(int(entry))
    return found


def _signal_all(pids: set[int], pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def collect_orphans(main: subprocess.Popen[bytes]) -> None:
    """Collect zombies of processes that were re-parented to us (we may be a child subreaper).

    The main child is left to Popen, which would otherwise lose its exit code; hence the peek first.
    """
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None:
            return
        if info.si_pid == main.pid:
            main.poll()
        else:
            try:
                os.waitpid(info.si_pid, os.WNOHANG)
            except ChildProcessError:
                pass


def stop_everything(pgid: int, tag: str, grace: float, on_wait: Callable[[], None] = lambda: None) -> int:
    """SIGINT, then SIGTERM, then SIGKILL to the group and every tagged process. Returns how many there were."""
    initial = _members(pgid, tag)
    if not initial:
        return 0
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        _signal_all(_members(pgid, tag), pgid, sig)
        deadline = time.monotonic() + (grace if sig != signal.SIGKILL else 5.0)
        while time.monotonic() < deadline:
            on_wait()
            if not _members(pgid, tag):
                return len(initial)
            time.sleep(0.02)
    return len(initial)


def become_subreaper() -> bool:
    """Make orphans of our descendants re-parent to us, so none outlives a turn unseen."""
    import ctypes

    PR_SET_CHILD_SUBREAPER = 36
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except OSError:
        return False
