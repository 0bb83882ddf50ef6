"""The long-running form of a loop: one step at a time, woken by a trigger or a timer, stopped by a signal.

Signal handlers only request shutdown; the step in progress finishes (or abandons itself cleanly) and
its record is journaled by the step itself.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType

from shared.watch import Watcher


class Stopper:
    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal_name = ""  # the signal that asked, if one did
        self.cause = ""  # what asked first: a signal's name, or another cause (shared/lifeline.py's supervisor gone)

    def install(self) -> Stopper:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.signal_name = signal.Signals(signum).name
        self.stop(self.signal_name)

    def stop(self, cause: str) -> None:
        """Ask for shutdown, from a signal handler or any thread; the first cause is the one kept."""
        self.cause = self.cause or cause
        self.event.set()

    @property
    def stopping(self) -> bool:
        return self.event.is_set()


def serve(step: Callable[[], bool], watcher: Watcher | None, stopper: Stopper, idle_seconds: float) -> None:
    """Run step until stopped. step returns True when it did work, so the next one runs at once."""
    with_watcher = watcher.start() if watcher else None
    try:
        while not stopper.stopping:
            did_work = step()
            if stopper.stopping or did_work:
                continue
            if with_watcher is not None:
                with_watcher.wait(idle_seconds, stopper.event)
            else:
                stopper.event.wait(idle_seconds)
    finally:
        if with_watcher is not None:
            with_watcher.stop()
