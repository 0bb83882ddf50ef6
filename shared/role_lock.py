"""One process per role and workspace, by a lock the kernel keeps: state/ROLE/loop.lock.

Each of `spec-loop run|once`, `plan-loop run|once|certify` and `build-loop run|once` claims its role's lock first
thing, before it restricts itself, starts a thread or touches a store, and holds it until the process ends. A second
one refuses at once, naming the holder's pid. `banach status`, `down` and `up` find every running loop by these locks
(`holder`), whoever started it, not by process names.

The lock is a POSIX record lock (fcntl F_SETLK on the whole file):
- the kernel drops it when the process ends in any way (SIGKILL, an OOM kill, a crash), so a dead loop holds nothing;
- it is not inherited across fork, so the agent, sensors and checks a loop starts never hold it, and none of them
  keeps it after the loop is gone;
- F_GETLK tells any reader the holder's pid from the kernel, without taking the lock.
It lives in the role's own state folder, the one folder the role may write under every backend (Landlock's row,
the role's account under `users`), so the role creates it and nothing else writes it.

Who writes what: the holder alone writes the file, one JSON line after it holds the lock (pid, command, start time),
for readers to describe it. The pid that counts is the kernel's; the line describes the holder only when its pid
matches. Crash between steps: killed before the lock is taken, nothing is held and nothing was done; killed after
it is taken and before the line is written, readers see the kernel's pid without a description; killed any time
later, the kernel releases the lock and the stale line describes nobody. Two started at once: the kernel grants
one, the other refuses.

A POSIX lock belongs to the process, and closing any descriptor of the file in that process drops it: this module
is the only one that opens the file, and a process asking about a lock it holds itself is answered without opening
it. `spec-loop edit` and `add` (a person's change, serialized with intake by spec's canon lock) and the commands that
read or record a person's request (report, unblock, resume, check-agent) do not take it.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path

from shared.errors import LockBusy
from shared.workspace import Workspace

LOCK_NAME = "loop.lock"
_FLOCK = "hhqqi4x"  # struct flock on 64-bit Linux: type, whence, start, len, pid (and padding)

_held: dict[Path, tuple[int, Holder]] = {}  # the locks this process holds: path -> (descriptor, what it wrote)


@dataclass(frozen=True)
class Holder:
    role: str
    pid: int  # from the kernel; 0 when the holder is in a pid namespace this reader cannot see
    command: str  # e.g. "build-loop run"; "" when the holder has not described itself (yet)
    started: float | None  # epoch seconds

    @property
    def one_shot(self) -> bool:
        """A command that ends by itself (`build-loop once`), not a loop's `run`."""
        return bool(self.command) and not self.command.endswith(" run")

    def describe(self) -> str:
        since = f", since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(self.started))}" if self.started else ""
        return f"{self.command or self.role + '-loop'} (pid {self.pid or 'unknown: another pid namespace'}{since})"


class RoleBusy(LockBusy):
    """Another process is this role of the workspace."""


def lock_path(ws: Workspace, role: str) -> Path:
    return ws.state / role / LOCK_NAME


def claim(ws: Workspace, role: str, command: str) -> Holder:
    """Hold the role's lock for the rest of this process's life, or raise RoleBusy naming its holder."""
    path = lock_path(ws, role)
    if path in _held:
        return _held[path][1]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        found = holder(ws, role)
        who = found.describe() if found else "a process that has just ended"
        one = f"; kill {found.pid} stops that one" if found and found.pid else ""
        raise RoleBusy(f"{command} cannot start: {role} already runs in the workspace {ws.root}: {who}. A workspace runs "
                       f"one {role} process at a time: let that one finish, or stop it first (banach down -w {ws.root} "
                       f"stops every loop of the workspace{one})") from None
    me = Holder(role, os.getpid(), command, time.time())
    line = json.dumps({"pid": me.pid, "command": me.command, "started": me.started}) + "\n"
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, line.encode(), 0)
    except OSError as error:  # a full disk: the lock holds without its line, holder() falls back to the kernel's pid
        if error.errno not in (errno.ENOSPC, errno.EDQUOT):
            os.close(fd)
            raise
    _held[path] = (fd, me)
    return me


def holder(ws: Workspace, role: str) -> Holder | None:
    """Who holds the role's lock now, read without taking it; None when nobody does."""
    path = lock_path(ws, role)
    if path in _held:
        return _held[path][1]
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:  # never made (the role never ran), or unreadable to this user: nobody we can see
        return None
    try:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        kind, _, _, _, pid = struct.unpack(_FLOCK, answer)
        if kind == fcntl.F_UNLCK:
            return None
        try:
            record = json.loads(os.pread(fd, 4096, 0) or b"{}")
        except ValueError:  # being written: the kernel's pid is what counts
            record = {}
    finally:
        os.close(fd)
    if not isinstance(record, dict) or record.get("pid") != pid or not pid:
        return Holder(role, pid, "", None)
    return Holder(role, pid, str(record.get("command") or ""), float(record.get("started") or 0) or None)

