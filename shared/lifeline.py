"""A supervised program ends with its supervisor: when supervisord dies, each of its programs stops as on SIGTERM.

supervisord starts every program with BANACH_SUPERVISED=1 (shared/app/templates/supervisord.conf.j2) and writes its
pid to state/supervisor/supervisord.pid before it starts any. A program so started calls `watch` once it has
restricted itself: it checks that its parent is that supervisord, opens a pidfd on it, and a thread waits for the
pidfd to become readable, which the kernel does when the parent ends, however it ends (SIGKILL included). Then the
program is asked to stop (`stop(SUPERVISOR_GONE)`: a loop finishes or abandons its step and journals why, as on
SIGTERM), and if it is still there after `grace` seconds (supervisord's stopwaitsecs) its process group is killed, as
supervisord would have done.

Why a pidfd and not the parent-death signal: a pidfd cannot be lost between fork and the program's first line (the
parent is checked against the pid file after the pidfd is open), it needs no signal to cross a Landlock scope, and it
wakes a thread rather than interrupting whatever the main thread is in (on a kernel without pidfd, Linux < 5.3, the
thread looks at its parent pid every half second instead). A parent found gone at start-up (supervisord killed while
the program was starting) stops the program at once.

A program started by hand (no BANACH_SUPERVISED) watches nothing: closing its terminal sends it SIGHUP. The variable
is taken out of the environment, so what the program starts (`plan-loop once` from the dashboard) does not inherit it.
"""
from __future__ import annotations

import os
import select
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from shared.workspace import Workspace

SUPERVISED = "BANACH_SUPERVISED"
SUPERVISOR_GONE = "supervisor gone"
GRACE = 30.0  # seconds, as supervisord's stopwaitsecs


def watch(ws: Workspace, stop: Callable[[str], None], *, grace: float = GRACE) -> str:
    """Under supervisord, stop this program when supervisord ends. Returns what it watches, for the start-up line
    ("" when not supervised)."""
    if os.environ.pop(SUPERVISED, "") != "1":
        return ""
    parent = os.getppid()
    expected = _pid_in(ws.supervisor_dir / "supervisord.pid")
    alive = parent != 1 and expected in (None, parent)
    handle = None
    if alive:
        try:
            handle = os.pidfd_open(parent)
        except ProcessLookupError:
            alive = False
        except OSError:  # no pidfd (Linux < 5.3): the thread looks at its parent every half second instead
            handle = None
        if os.getppid() != parent:  # it ended meanwhile: a pidfd would not be on our parent
            alive = False
    if not alive and handle is not None:
        os.close(handle)
        handle = None
    threading.Thread(target=_wait, args=(parent if alive else None, handle, stop, grace), name="lifeline",
                     daemon=True).start()
    if not alive:
        return f"its supervisor (pid {expected or 'unknown'}) was gone at start-up: stopping"
    return f"stops when its supervisor (pid {parent}) ends"


def _pid_in(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _wait(parent: int | None, handle: int | None, stop: Callable[[str], None], grace: float) -> None:
    if handle is not None:
        select.select([handle], [], [])  # readable once the parent has ended
    elif parent is not None:
        while os.getppid() == parent:
            time.sleep(0.5)
    stop(SUPERVISOR_GONE)
    time.sleep(grace)  # the program ends meanwhile, and this thread with it
    group = os.getpgrp()
    if group == os.getpid():  # supervisord made it a group leader: its children in the group go with it
        os.killpg(group, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
