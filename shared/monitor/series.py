"""The monitor's inputs, read from the journals read-only: residual per plan pass, segmented by canon
version, and the events worth marking on the plot."""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from shared.contracts.blocks import requirement_of
from shared.errors import BanachError
from shared.journal import Journal
from shared.monitor.fit import Diagnosis, diagnose
from shared.workspace import Workspace


@dataclass(frozen=True)
class PlanPass:
    seq: int
    ts: float
    canon_version: int
    code_commit: str
    residual: int
    items: tuple[str, ...]
    requirements_by_item: dict[str, list[str]]
    fresh: bool
    bias: int  # items build's commits claimed done that this pass still found open
    unmeasured: int
    started_seq: int  # the 'pass.started' row; a certificate names it
    held_back_only: int = 0  # open items whose failing checks are held-back tests alone (no agent sees why)


@dataclass(frozen=True)
class LaneTurn:
    """One turn of a parallel worker (build.workers > 1): which lane, when (journal times), and what came of it."""

    lane: int
    start: float
    end: float
    decision: str


@dataclass(frozen=True)
class History:
    passes: tuple[PlanPass, ...]
    certificates: tuple[dict[str, object], ...] = ()
    # (ts, kind): a turn's decision (keep, rollback, stall, interrupted, agent_failed), 'reverted' at the same ts when
    # that turn's out-of-scope edits were reverted, climb, blocked, canon
    events: tuple[tuple[float, str], ...] = field(default=())
    lanes: tuple[LaneTurn, ...] = ()  # the latest run's, when it had parallel workers
    # (ts, requirement): which requirement each turn, block, round and climb at that time was about
    items: tuple[tuple[float, str], ...] = ()
    # (ts, what): what a person did: an unblock, a resume, a pause, a restart or a plan pass asked from the dashboard
    person: tuple[tuple[float, str], ...] = ()

    def current_segment(self) -> list[PlanPass]:
        if not self.passes:
            return []
        version = self.passes[-1].canon_version
        segment: list[PlanPass] = []
        for plan_pass in reversed(self.passes):
            if plan_pass.canon_version != version:
                break
            segment.append(plan_pass)
        return list(reversed(segment))

    def segments(self) -> list[list[PlanPass]]:
        out: list[list[PlanPass]] = []
        for plan_pass in self.passes:
            if not out or out[-1][-1].canon_version != plan_pass.canon_version:
                out.append([])
            out[-1].append(plan_pass)
        return out


def diagnose_segment(segment: Sequence[PlanPass]) -> Diagnosis:
    """The monitor's verdict on one canon segment, with the item ids so a cycle can be named."""
    requirements_of: dict[str, Sequence[str]] = {k: v for p in segment for k, v in p.requirements_by_item.items()}
    return diagnose([p.residual for p in segment], [p.items for p in segment], requirements_of)


def read_history(ws: Workspace) -> History:
    passes = []
    certificates: list[dict[str, object]] = []
    plan = Journal.reader(ws.journal_path("plan"))
    if plan is not None:
        with plan:
            for row in plan.rows("pass"):
                d = row.data
                passes.append(PlanPass(row.seq, row.ts, d["canon_version"], d["code_commit"], d["residual"],
                                       tuple(d.get("items", [])), d.get("requirements_by_item", {}), d.get("fresh", False),
                                       len(d.get("believed_done_still_open", [])), len(d.get("unmeasured", [])),
                                       d.get("started_seq", -1), len((d.get("held_back") or {}).get("only", []))))
            certificates = [{"seq": row.seq, "ts": row.ts, **row.data} for row in plan.rows("certificate")]
    events: list[tuple[float, str]] = []
    lanes: list[LaneTurn] = []
    items: list[tuple[float, str]] = []
    person: list[tuple[float, str]] = []
    build = Journal.reader(ws.journal_path("build"))
    if build is not None:
        with build:
            lanes = _lane_turns(build)
            for row in build.rows("iteration.ended"):
                if row.data.get("decision") != "already_green":
                    items.append((row.ts, requirement_of(str(row.data.get("item", "")))))
                decision = row.data.get("decision", "")
                if decision in ("rollback", "keep", "stall", "interrupted", "agent_failed"):
                    events.append((row.ts, decision))
                if row.data.get("flaky"):  # a check flipped on one tree: measured again, and left out (flakes.py)
                    events.append((row.ts, "flaky"))
                if row.data.get("reverted") or row.data.get("hostile"):  # the fence's scope.fighting, on this turn
                    events.append((row.ts, "reverted"))
            for kind, mark in (("ladder.climb", "climb"), ("item.blocked", "blocked"), ("item.round", "round")):
                for row in build.rows(kind):
                    events.append((row.ts, mark))
                    items.append((row.ts, requirement_of(str(row.data.get("item", "")))))
            person += [(row.ts, f"unblock {requirement_of(str(row.data.get('item', '')))}")
                       for row in build.rows("item.unblocked")]
            person += [(row.ts, "resume build") for row in build.rows("build.resumed")]
    person += _dashboard_actions(ws)
    spec = Journal.reader(ws.journal_path("spec"))
    if spec is not None:
        with spec:
            events += [(row.ts, "canon") for row in spec.rows("draft.accepted")]
    return History(tuple(passes), tuple(certificates), tuple(sorted(events)), tuple(lanes), tuple(sorted(items)),
                   tuple(sorted(person)))


def _dashboard_actions(ws: Workspace) -> list[tuple[float, str]]:
    """What a person did from the dashboard that no loop's journal records as theirs (an unblock or a resume from the
    page is build's row already): pausing or restarting a loop, asking for a plan pass."""
    journal = Journal.reader(ws.state / "serve" / "journal.db")
    if journal is None:
        return []
    with journal:
        rows = journal.rows("dashboard.action")
    words = {"pause": "pause build", "restart": "restart {target}", "plan-pass": "plan pass asked"}
    return [(row.ts, words[row.data["action"]].format(target=row.data.get("target") or ""))
            for row in rows if row.data.get("ok") and row.data.get("action") in words]


def _lane_turns(build: Journal) -> list[LaneTurn]:
    """The lanes' turns since the last run with workers started."""
    runs = [row for row in build.rows("loop.started") if int(row.data.get("workers") or 1) > 1]
    if not runs:
        return []
    since = runs[-1].seq
    started = {row.data["n"]: row for row in build.rows("iteration.started", since=since) if "lane" in row.data}
    return [LaneTurn(int(row.data["lane"]), started[row.data["n"]].ts, row.ts, str(row.data.get("decision")))
            for row in build.rows("iteration.ended", since=since) if row.data.get("n") in started]


def read_series_file(path: Path) -> list[float]:
    """A JSON array of numbers, or one number a line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BanachError(f"{path}: cannot read the series: {exc}") from None
    stripped = text.strip()
    if not stripped:
        raise BanachError(f"{path}: the series is empty; give a JSON array of numbers or one number a line")
    if stripped.startswith(("[", "{")):
        try:
            values = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise BanachError(f"{path}:{exc.lineno}: not a JSON array of numbers: {exc.msg}") from None
        if not isinstance(values, list):
            raise BanachError(f"{path}: not a JSON array of numbers (it is a JSON {type(values).__name__})")
        numbers = []
        for index, value in enumerate(values):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise BanachError(f"{path}: element {index} is {value!r}; every element must be a finite number >= 0")
            numbers.append(float(value))
        return numbers
    numbers = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.strip().startswith("#"):
            continue
        try:
            value = float(line.strip())
        except ValueError:
            raise BanachError(f"{path}:{number}: {line.strip()!r} is not a number") from None
        if value != value or value < 0 or value == float("inf"):
            raise BanachError(f"{path}:{number}: {line.strip()!r} must be a finite number >= 0")
        numbers.append(value)
    return numbers
