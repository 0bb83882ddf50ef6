"""What build is doing right now: state/build/current.json, written when an agent's turn starts and removed
when it ends; with parallel workers one file per lane, current-lane-K.json. Build writes them; `banach status`
reads them.

The file outlives a build-loop that was killed mid-turn (the next start's recovery removes it), so a reader
checks it: a file whose build-loop process is gone, or that is older than the turn's budget plus MARGIN, is
stale, never shown as running.
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from shared.atomic import write_json

FILE_NAME = "current.json"
# after the agent's budget the governor still fences, runs the fix commands and the sensors, and commits
MARGIN = 600.0


def file_name(lane: int | None) -> str:
    return FILE_NAME if lane is None else f"current-lane-{lane}.json"


@dataclass(frozen=True)
class CurrentTurn:
    n: int
    item: str
    agent: str
    started: float  # epoch seconds
    pid: int  # the build-loop process running the turn
    turn_timeout: float
    seconds: float  # how long it has been running, when read
    stale: str  # why this is not a running turn (build-loop gone, too old), or ""
    lane: int | None = None  # which parallel worker, when build runs several

    def as_json(self) -> dict[str, object]:
        return {"iteration": self.n, "item": self.item, "agent": self.agent, "started": self.started,
                "pid": self.pid, "turn_timeout": self.turn_timeout, "seconds": round(self.seconds), "stale": self.stale,
                "lane": self.lane}


def started(build_dir: Path, *, n: int, item: str, agent: str, turn_timeout: float, lane: int | None = None) -> None:
    write_json(build_dir / file_name(lane), {"n": n, "item": item, "agent": agent, "started": time.time(),
                                             "pid": os.getpid(), "turn_timeout": turn_timeout, "lane": lane})


def ended(build_dir: Path, *, lane: int | None = None) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(build_dir / file_name(lane))


def ended_all(build_dir: Path) -> None:
    """Recovery, when no turn runs: every record a killed build-loop left behind."""
    for path in build_dir.glob("current*.json"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another account's process (the users backend): it exists
        return True
    return True


def read_all(build_dir: Path, *, now: float | None = None) -> list[CurrentTurn]:
    """Every turn running now (or stale records), the single worker's and each lane's, by lane."""
    found = [read(build_dir, now=now)] + [read(build_dir, now=now, lane=lane) for lane in _lanes(build_dir)]
    return [turn for turn in found if turn is not None]


def _lanes(build_dir: Path) -> list[int]:
    lanes = []
    for path in build_dir.glob("current-lane-*.json"):
        with contextlib.suppress(ValueError):
            lanes.append(int(path.stem.rsplit("-", 1)[1]))
    return sorted(lanes)


def read(build_dir: Path, *, now: float | None = None, lane: int | None = None) -> CurrentTurn | None:
    """The turn running now (or a stale record of one), or None when build runs no turn. An unreadable file is
    reported as stale rather than raised: status must work whatever build left behind."""
    path = build_dir / file_name(lane)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        turn = CurrentTurn(int(data["n"]), str(data["item"]), str(data["agent"]), float(data["started"]),
                           int(data["pid"]), float(data["turn_timeout"]), 0.0, "")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return CurrentTurn(0, "?", "?", 0.0, 0, 0.0, 0.0, f"{path} cannot be read ({exc})", lane)
    seconds = max(0.0, (time.time() if now is None else now) - turn.started)
    stale = ""
    if not _alive(turn.pid):
        stale = f"build-loop (pid {turn.pid}) is no longer running"
    elif seconds > turn.turn_timeout + MARGIN:
        stale = f"older than the turn's budget ({turn.turn_timeout:g} s) plus {MARGIN:g} s"
    return CurrentTurn(turn.n, turn.item, turn.agent, turn.started, turn.pid, turn.turn_timeout, seconds, stale, lane)
