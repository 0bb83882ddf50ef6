"""The one choke point through which every child process runs.

A request value goes in (argv, cwd, env, stdin, budget); an outcome value comes out (exit code,
output, times). Children start in their own session. When the main process ends or its budget
runs out, everything it started is stopped: its process group, and every process that carries the
run's reap tag in its environment, which catches children that moved to a new session.
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

REAP_TAG = "BANACH_REAP_TAG"
OUTPUT_LIMIT = 1_000_000  # bytes kept per stream; the tail is what matters for a failure


@dataclass(frozen=True)
class Request:
    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str] = field(default_factory=dict)
    stdin: str = ""
    timeout: float = 60.0
    grace: float = 1.0  # seconds between SIGINT, SIGTERM and SIGKILL


@dataclass(frozen=True)
class Outcome:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    started: float
    duration: float
    timed_out: bool
    reaped: int  # processes still alive after the main one ended, which we had to kill
    cancelled: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.cancelled

    def describe(self) -> str:
        """A failed child as a person wants to read it: command, exit code, indented output."""

        def indent(text: str) -> str:
            body = text.rstrip() or "(nothing)"
            return "\n".join("    " + line for line in body.splitlines())

        status = "timed out" if self.timed_out else f"exit code {self.returncode}"
        return f"command: {' '.join(self.argv)}\n{status}\nstdout:\n{indent(self.stdout)}\nstderr:\n{indent(self.stderr)}"


def _read_tail(handle: IO[bytes]) -> str:
    handle.flush()
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - OUTPUT_LIMIT))
    return handle.read().decode("utf-8", errors="replace")


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


def _reap_orphans() -> None:
    """Collect zombies of processes that were re-parented to us (we may be a child subreaper)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def stop_everything(pgid: int, tag: str, grace: float, *, reap_orphans: bool = False) -> int:
    """SIGINT, then SIGTERM, then SIGKILL to the group and every tagged process. Returns how many there were."""
    initial = _members(pgid, tag)
    if not initial:
        return 0
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        _signal_all(_members(pgid, tag), pgid, sig)
        deadline = time.monotonic() + (grace if sig != signal.SIGKILL else 5.0)
        while time.monotonic() < deadline:
            if reap_orphans:
                _reap_orphans()
            if not _members(pgid, tag):
                return len(initial)
            time.sleep(0.02)
    return len(initial)


def run(request: Request, *, reap_orphans: bool = False, cancel: threading.Event | None = None) -> Outcome:
    """Run one child to completion or to its budget, then stop everything it started.

    reap_orphans: only for a caller that runs one child at a time and made itself a child subreaper
    (build-loop); it collects every zombie re-parented to it.
    cancel: when set (a shutdown was requested), the child is stopped as if its budget ran out.
    """
    tag = secrets.token_hex(8)
    env = {**request.env, REAP_TAG: tag}
    with (
        tempfile.TemporaryFile() as stdin_file,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        stdin_file.write(request.stdin.encode())
        stdin_file.seek(0)
        started = time.time()
        clock = time.monotonic()
        try:
            proc = subprocess.Popen(
                request.argv,
                cwd=request.cwd,
                env=env,
                stdin=stdin_file,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            return Outcome(request.argv, 127, "", f"cannot start {request.argv[0]}: {exc}", started, 0.0, False, 0)
        timed_out = cancelled = False
        deadline = clock + request.timeout
        try:
            while True:
                try:
                    proc.wait(timeout=max(0.0, min(0.1, deadline - time.monotonic())))
                    break
                except subprocess.TimeoutExpired:
                    if cancel is not None and cancel.is_set():
                        cancelled = True
                        break
                    if time.monotonic() >= deadline:
                        timed_out = True
                        break
        finally:
            reaped = stop_everything(proc.pid, tag, request.grace, reap_orphans=reap_orphans)
            proc.wait()
        return Outcome(
            argv=request.argv,
            returncode=proc.returncode,
            stdout=_read_tail(out),
            stderr=_read_tail(err),
            started=started,
            duration=time.monotonic() - clock,
            timed_out=timed_out,
            reaped=reaped,
            cancelled=cancelled,
        )


def become_subreaper() -> bool:
    """Make orphans of our descendants re-parent to us, so none outlives a turn unseen."""
    import ctypes

    PR_SET_CHILD_SUBREAPER = 36
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except OSError:
        return False


def run_interactive(argv: tuple[str, ...], cwd: Path | None = None) -> int:
    """A child that owns the terminal (an editor). It shares our terminal, so it stays in our session."""
    try:
        return subprocess.call(argv, cwd=cwd)
    except OSError as exc:
        from shared.errors import BanachError

        raise BanachError(f"cannot start {argv[0]}: {exc}. Set $EDITOR to an editor that is installed.") from None
