"""What a loop's journal says of its runs: how often it started, how often it came back after dying, and when and how
its last run ended.

Every `run` journals `loop.started` when it begins and `loop.stopped` (the signal, or the cause: its supervisor gone;
build adds a budget's reason) when it stops cleanly. A run with no `loop.stopped` before the next `loop.started`
ended without a clean stop: SIGKILL, an OOM kill, a crash of the interpreter, a power cut. Nobody is left to journal
that, so its time is bounded by the next start. A restart is a start after a run that did not end by a signal (a
person's or a supervisor's stop): after a kill, a crash, an error, a budget, or its supervisor's death.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from shared.journal import Journal, Row
from shared.lifeline import SUPERVISOR_GONE
from shared.workspace import Role, Workspace

STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")


@dataclass(frozen=True)
class End:
    how: str  # for a person
    clean: bool  # it journaled its stop
    at: float | None  # when it stopped, when journaled
    before: float | None  # an unclean end: the next start, which it came before

    def describe(self) -> str:
        if self.at is not None:
            return f"{_clock(self.at)}, {self.how}"
        if self.before is not None:
            return f"before {_clock(self.before)} (when it started again), {self.how}"
        return self.how

    def as_json(self) -> dict[str, object]:
        return {"how": self.how, "clean": self.clean, "at": self.at, "before": self.before, "text": self.describe()}


@dataclass(frozen=True)
class Runs:
    starts: int
    restarts: int
    last_end: End | None  # of the last run that ended (not the one running now)
    open_run: float | None  # start of a run that has no end journaled: running now, or died without a trace

    def as_json(self) -> dict[str, object]:
        return {"starts": self.starts, "restarts": self.restarts,
                "last_end": self.last_end.as_json() if self.last_end else None, "open_since": self.open_run}


def _clock(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


UNCLEAN = "killed or crashed (SIGKILL, an OOM kill, a power cut: no clean stop was journaled)"


def _how(stopped: Row, role: str) -> tuple[str, bool]:
    """How a journaled stop came about, and whether it was asked for (a signal)."""
    data = stopped.data
    if data.get("cause") == SUPERVISOR_GONE:
        return "stopped cleanly because its supervisor had died", False
    if data.get("signal"):
        return f"stopped cleanly on {data['signal']}", data["signal"] in STOP_SIGNALS
    if data.get("reason") and data["reason"] != "stopped":
        return f"stopped: {data['reason']}", False
    return f"stopped on an error (banach logs {role} shows it)", False


def read_runs(ws: Workspace, role: Role, *, running: bool) -> Runs:
    """running: the role's lock is held by its `run` now, so a last run without an end is that one, alive."""
    journal = Journal.reader(ws.journal_path(role))
    if journal is None:
        return Runs(0, 0, None, None)
    with journal:
        rows = journal.rows("loop.", prefix=True)
    runs: list[tuple[Row, Row | None]] = []
    for row in rows:
        if row.kind == "loop.started":
            runs.append((row, None))
        elif row.kind == "loop.stopped" and runs and runs[-1][1] is None:
            runs[-1] = (runs[-1][0], row)
    restarts, last_end = 0, None
    for index, (started, stopped) in enumerate(runs):
        if stopped is None:
            if index + 1 < len(runs):  # a later start: this one died without a trace before it
                last_end, asked = End(UNCLEAN, False, None, runs[index + 1][0].ts), False
            elif running:
                continue
            else:
                last_end, asked = End(UNCLEAN + f"; it had started {_clock(started.ts)}", False, None, None), False
        else:
            how, asked = _how(stopped, role)
            last_end = End(how, True, stopped.ts, None)
        restarts += index + 1 < len(runs) and not asked
    open_run = runs[-1][0].ts if runs and runs[-1][1] is None else None
    return Runs(len(runs), restarts, last_end, open_run)
