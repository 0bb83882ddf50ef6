"""spec-loop run: the inbox, watched with watchdog and debounced, taken whenever drafts land. A burst of
drops (events until spec.debounce_seconds of quiet) is one intake, and so one change."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from shared.daemon import Stopper, serve
from shared.watch import Watcher
from spec_loop.intake import SKIPPED_PREFIXES, SKIPPED_SUFFIXES, pending_drafts, take_inbox
from spec_loop.service import SpecService


def serve_inbox(service: SpecService, *, echo: Callable[[str], None], stopper: Stopper | None = None) -> None:
    stopper = stopper or Stopper().install()
    inbox = service.ws.inbox

    def wanted(path: Path) -> bool:
        return path.parent == inbox and not path.name.startswith(SKIPPED_PREFIXES) and not path.name.endswith(SKIPPED_SUFFIXES)

    watcher = Watcher([(inbox, False)], debounce=service.ws.config.spec.debounce_seconds, wanted=wanted)
    service.journal.append("loop.started", {"version": service.store.version()})

    def step() -> bool:
        if not pending_drafts(inbox):
            return False
        decision = take_inbox(service)
        for notice in service.notices:
            echo(notice)
        service.notices.clear()
        if decision is not None:
            echo(decision.describe())
        return False  # wait for the next event rather than spinning on a draft we cannot move

    try:
        serve(step, watcher, stopper, idle_seconds=30.0)
    finally:
        service.journal.append("loop.stopped", {"signal": stopper.signal_name, "cause": stopper.cause})
