"""The one choke point through which every child process runs.

A request value goes in (argv, cwd, env, stdin, budget, limits); an outcome value comes out (exit
code, output, times, and which limit it hit). Children start in their own session. When the main
process ends or its budget runs out, everything it started is stopped.

With limits, the child runs in its own cgroup (shared/cgroups.py), which nothing it starts can
leave, killed whole at the end, with process and memory limits; without limits (git and other cheap
children) or where no cgroup can be made, its process group and every process carrying the run's
reap tag in its environment are stopped, which catches children that moved to a new session but not
one that also dropped the tag.

Output is read from pipes and only its tail is kept, so a child that prints forever fills no disk.
"""
from __future__ import annotations

import contextlib
import os
import resource
import secrets
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from shared.cgroups import Cgroup, size_text
from shared.isolation import launcher
from shared.reaping import REAP_TAG, become_subreaper, collect_orphans, stop_everything  # noqa: F401 (re-exported)

OUTPUT_LIMIT = 1_000_000  # bytes kept per stream; the tail is what matters for a failure
REPORT_LIMIT = 8_000_000  # bytes of a report channel; past it the run is stopped and its report is None
REPORT_FD_ENV = "BANACH_REPORT_FD"  # the descriptor number of the report channel, in the child's environment
CAP_CHECK_EVERY = 0.1  # seconds between reads of the cgroup's counters while the child runs
# The child stops itself before exec, so that it is in its cgroup and under its file size limit before
# it runs one instruction of its own; the parent moves it and then sends SIGCONT. A shell and not a
# preexec_fn: preexec_fn runs Python in a forked copy of a threaded process (plan runs checks from
# threads) and can deadlock; a `python -I` wrapper costs 20 ms per run, the shell 1 ms.
GATE = ("/bin/sh", "-c", 'kill -STOP $$ && exec "$@"', "banach-run")


@dataclass(frozen=True)
class Limits:
    max_processes: int | None = None  # processes (and threads) at once, pids.max
    memory_bytes: int | None = None  # memory of all its processes together; past it the kernel OOM-kills
    file_bytes: int | None = None  # largest file it may write (RLIMIT_FSIZE: EFBIG or SIGXFSZ past it)
    output_bytes: int | None = None  # stdout and stderr together; past it the run is stopped


@dataclass(frozen=True)
class Request:
    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str] = field(default_factory=dict)
    stdin: str = ""
    timeout: float = 60.0
    grace: float = 1.0  # seconds between SIGINT, SIGTERM and SIGKILL
    limits: Limits | None = None  # None: no cgroup, no limits (cheap children such as git)
    report: bool = False  # hand the child a report channel: a pipe only it and we hold, named by REPORT_FD_ENV


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
    capped: str = ""  # which limit it hit ("output over 10 MiB"), or ""
    halted: bool = False  # stopped because the caller's halt event was set (the gateway saw a limit or a spent budget)
    report: str | None = None  # what the child wrote to its report channel (None: it had none, or overfilled it)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.cancelled and not self.capped and not self.halted

    def describe(self) -> str:
        """A failed child as a person wants to read it: command, exit code, indented output."""

        def indent(text: str) -> str:
            body = text.rstrip() or "(nothing)"
            return "\n".join("    " + line for line in body.splitlines())

        status = "timed out" if self.timed_out else f"exit code {self.returncode}"
        if self.capped:
            status += f", capped: {self.capped}"
        return f"command: {' '.join(self.argv)}\n{status}\nstdout:\n{indent(self.stdout)}\nstderr:\n{indent(self.stderr)}"


class _Tail:
    """The last `keep` bytes of a stream, and how many there were in all."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.data = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > 2 * self.keep:
            del self.data[: len(self.data) - self.keep]

    def text(self) -> str:
        return bytes(self.data[-self.keep :]).decode("utf-8", errors="replace")


def _executable(program: str, cwd: Path, env: Mapping[str, str]) -> bool:
    """Whether exec would find the program, as Popen looks it up (the gate's shell does the exec)."""
    if "/" in program:
        path = cwd / program
        return os.access(path, os.X_OK) and not path.is_dir()
    return shutil.which(program, path=os.pathsep.join(os.get_exec_path(dict(env)))) is not None


def _release(proc: subprocess.Popen[bytes], cgroup: Cgroup | None, limits: Limits) -> None:
    """Move the gated child into its cgroup, set its file size limit, and let it exec."""
    _, status = os.waitpid(proc.pid, os.WUNTRACED)
    if not os.WIFSTOPPED(status):
        proc.returncode = os.waitstatus_to_exitcode(status)  # died before its exec; nothing of it ran
        return
    try:
        if cgroup is not None:
            cgroup.place(proc.pid)
        if limits.file_bytes is not None:
            resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    except BaseException:
        os.kill(proc.pid, signal.SIGKILL)  # it has run nothing of its own yet, and is in no cgroup
        raise
    os.kill(proc.pid, signal.SIGCONT)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None  # before Linux 5.3: poll for the exit instead


@dataclass
class _Watch:
    """One run's state while it is running: its streams and why it ended."""

    proc: subprocess.Popen[bytes]
    keep: int
    output_cap: int | None
    report_fd: int | None = None  # our end of the child's report channel
    streams: dict[int, _Tail] = field(default_factory=dict)
    over_output: bool = False
    report: bytearray = field(default_factory=bytearray)
    over_report: bool = False

    def __post_init__(self) -> None:
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.streams = {self.proc.stdout.fileno(): _Tail(self.keep), self.proc.stderr.fileno(): _Tail(self.keep)}

    @property
    def fds(self) -> list[int]:
        return [*self.streams, *([self.report_fd] if self.report_fd is not None else [])]

    def read(self, poller: select.poll, fd: int) -> None:
        chunk = os.read(fd, 65536)
        if not chunk:
            poller.unregister(fd)
            return
        if fd == self.report_fd:
            self.report += chunk
            self.over_report = self.over_report or len(self.report) > REPORT_LIMIT
            return
        self.streams[fd].add(chunk)
        if self.output_cap is not None and sum(s.total for s in self.streams.values()) > self.output_cap:
            self.over_output = True

    def pump(self, poller: select.poll) -> bool:
        """Read what is ready now, without waiting; False when nothing was."""
        ready = [fd for fd, _ in poller.poll(0) if fd in self.fds]
        for fd in ready:
            self.read(poller, fd)
        return bool(ready)

    def drain(self, poller: select.poll) -> None:
        """What is left in the pipes once every writer is gone, or what is ready from one that escaped us."""
        deadline = time.monotonic() + 1.0  # only a writer we could not contain keeps it busy that long
        while self.pump(poller) and time.monotonic() < deadline:
            pass

    def text(self, which: int) -> str:
        return list(self.streams.values())[which].text()

    def report_text(self) -> str | None:
        if self.report_fd is None or self.over_report:
            return None
        return self.report.decode("utf-8", errors="replace")


def run(request: Request, *, reap_orphans: bool = False, cancel: threading.Event | None = None,
        halt: threading.Event | None = None) -> Outcome:
    """Run one child to completion or to its budget or limits, then stop everything it started.

    reap_orphans: only for a caller that runs one child at a time and made itself a child subreaper
    (build-loop); it collects every zombie re-parented to it.
    cancel: when set (a shutdown was requested), the child is stopped as if its budget ran out.
    halt: when set (something outside the child decided its turn is over), the child is stopped; Outcome.halted.
    """
    limits = request.limits
    started = time.time()
    if limits is not None and not _executable(request.argv[0], request.cwd, request.env):
        return Outcome(request.argv, 127, "", f"cannot start {request.argv[0]}: no such program", started, 0.0, False, 0)
    cgroup = Cgroup.create(limits.max_processes, limits.memory_bytes) if limits is not None else None
    try:
        return _run(request, cgroup, reap_orphans, cancel, halt)
    finally:
        if cgroup is not None:
            cgroup.remove()


def _run(request: Request, cgroup: Cgroup | None, reap_orphans: bool, cancel: threading.Event | None,
         halt: threading.Event | None) -> Outcome:
    limits = request.limits
    tag = secrets.token_hex(8)
    env = dict(request.env) if cgroup is not None else {**request.env, REAP_TAG: tag}
    argv = request.argv if limits is None else (*GATE, *request.argv)
    keep = min(OUTPUT_LIMIT, limits.output_bytes) if limits and limits.output_bytes else OUTPUT_LIMIT
    with tempfile.TemporaryFile() as stdin_file:
        stdin_file.write(request.stdin.encode())
        stdin_file.seek(0)
        started = time.time()
        clock = time.monotonic()
        # The report channel is a pipe, never a path: no other process can open it by name, swap it for a FIFO, or
        # reach a sibling's; only the child and what it starts hold the writing end.
        ours, theirs = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK) if request.report else (None, None)
        if theirs is not None:
            os.set_blocking(theirs, True)
            env[REPORT_FD_ENV] = str(theirs)
        try:
            proc = launcher.popen(argv, cwd=request.cwd, env=env, stdin=stdin_file, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True,
                                    pass_fds=(theirs,) if theirs is not None else ())
        except OSError as exc:
            for fd in (ours, theirs):
                if fd is not None:
                    os.close(fd)
            return Outcome(request.argv, 127, "", f"cannot start {request.argv[0]}: {exc}", started, 0.0, False, 0)
        if theirs is not None:
            os.close(theirs)
        with proc, _closing(ours):
            watch = _Watch(proc, keep, limits.output_bytes if limits else None, ours)
            poller = select.poll()
            for fd in watch.fds:
                poller.register(fd, select.POLLIN)
            pidfd = _pidfd(proc.pid)
            if pidfd is not None:
                poller.register(pidfd, select.POLLIN)
            timed_out = cancelled = halted = False

            def on_wait() -> None:
                watch.pump(poller)  # a child that prints on its way out must not block on a full pipe
                if reap_orphans:
                    collect_orphans(proc)

            try:
                if limits is not None:
                    _release(proc, cgroup, limits)
                deadline = clock + request.timeout
                next_check = clock + CAP_CHECK_EVERY
                while proc.returncode is None:
                    wait = max(0.0, min(0.1, deadline - time.monotonic()))
                    events = poller.poll(wait * 1000)
                    if any(fd == pidfd for fd, _ in events) or (pidfd is None and proc.poll() is not None):
                        break
                    for fd, _ in events:
                        watch.read(poller, fd)
                    if watch.over_output or watch.over_report:
                        break
                    now = time.monotonic()
                    if cgroup is not None and now >= next_check:
                        next_check = now + CAP_CHECK_EVERY
                        if cgroup.capped():
                            break
                    if cancel is not None and cancel.is_set():
                        cancelled = True
                        break
                    if halt is not None and halt.is_set():
                        halted = True
                        break
                    if now >= deadline:
                        timed_out = True
                        break
            finally:
                if cgroup is not None:
                    reaped = cgroup.stop(request.grace, on_wait)
                else:
                    reaped = stop_everything(proc.pid, tag, request.grace, on_wait)
                returncode = proc.wait()
                on_wait()
                watch.drain(poller)
                if pidfd is not None:
                    os.close(pidfd)
            capped = _capped(watch, cgroup, limits, returncode)
            return Outcome(
                argv=request.argv,
                returncode=returncode,
                stdout=watch.text(0),
                stderr=watch.text(1),
                started=started,
                duration=time.monotonic() - clock,
                timed_out=timed_out,
                reaped=reaped,
                cancelled=cancelled,
                capped=capped,
                halted=halted,
                report=watch.report_text(),
            )


@contextlib.contextmanager
def _closing(fd: int | None) -> Iterator[None]:
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def _capped(watch: _Watch, cgroup: Cgroup | None, limits: Limits | None, returncode: int) -> str:
    if limits is None:
        return ""
    reasons = []
    if watch.over_output and limits.output_bytes is not None:
        reasons.append(f"output over {size_text(limits.output_bytes)}")
    if watch.over_report:
        reasons.append(f"report over {size_text(REPORT_LIMIT)}")
    if cgroup is not None and (counted := cgroup.capped()):
        reasons.append(counted)
    # SIGXFSZ kills a program that does not handle it; one that ignores it (Python does) gets EFBIG and
    # usually says so. A child could print the words to fake it, which only gets its own run rolled back.
    if limits.file_bytes is not None and (returncode == -signal.SIGXFSZ or "File too large" in watch.text(1)):
        reasons.append(f"file size limit {size_text(limits.file_bytes)}")
    return "; ".join(reasons)


def run_interactive(argv: tuple[str, ...], cwd: Path | None = None) -> int:
    """A child that owns the terminal (an editor). It shares our terminal, so it stays in our session."""
    try:
        return subprocess.call(argv, cwd=cwd)
    except OSError as exc:
        from shared.errors import BanachError

        raise BanachError(f"cannot start {argv[0]}: {exc}. Set $EDITOR to an editor that is installed.") from None
