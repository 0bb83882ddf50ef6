"""The convergence plot people read: residual per plan pass, the fitted line with q, the diagnosis, and what
build did between passes. The only module that imports matplotlib."""
from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator, NullLocator
from matplotlib.transforms import Bbox

from shared.monitor.fit import OFFSET, Diagnosis, Fit
from shared.monitor.series import History, LaneTurn, PlanPass, diagnose_segment

EVENT_STYLE = {  # kind: (marker, colour, legend label); a turn's decision, or something build did after one
    "keep": ("P", "#2ca02c", "kept (turn committed)"),
    "rollback": ("v", "#d62728", "rollback"),
    "stall": ("o", "#bbbbbb", "stall (turn changed nothing)"),
    "climb": ("^", "#9467bd", "ladder climb"),
    "blocked": ("x", "#8c564b", "item blocked"),
    "round": (">", "#17becf", "blocked item's next round"),
    "flaky": ("h", "#e377c2", "a check flipped on one tree (flaky, left out)"),
    "interrupted": ("d", "#7f7f7f", "interrupted"),
    "agent_failed": ("s", "#ff7f0e", "agent failed to run"),
    "person": ("*", "#e6a700", "a person acted (what, above it)"),
}
TURN_KINDS = ("keep", "rollback", "stall", "agent_failed", "interrupted")  # a turn an agent took: what the strip counts
REVERTED_STYLE = ("o", "#d62728", "edits outside scope reverted")  # a ring around that turn's own mark
DATA_TOP = 0.82  # the highest residual sits this far up the axes; above it is room for the canon-version labels
DATA_BOTTOM = 0.07  # and the zero row this far up, so the certificate stars are whole


# The y axis is log(r + OFFSET), the transform the monitor fits (shared/monitor/fit.py). Contraction is a straight line
# and the fitted line is exactly that line; small counts keep their log spacing; and a residual of 0 has a real,
# finite place (log 0.5), labelled 0 and drawn like any other count, not tucked under the edge of a log axis.
def _to_axis(residual: Any) -> Any:
    return np.log(np.maximum(np.asarray(residual, dtype=float) + OFFSET, 1e-12))


def _from_axis(value: Any) -> Any:
    return np.exp(np.asarray(value, dtype=float)) - OFFSET


@dataclass(frozen=True)
class Mark:
    x: float
    residual: int
    kind: str
    ts: float = 0.0  # the journal row's time: which item (History.items) or person's act (History.person) it is


def residual_ticks(highest: int, top: float) -> list[int]:
    """Counts a person reads at a glance: every integer up to a residual of 5, then steps of 1, 2 and 5 up to the
    first at or above the highest residual (while the axis, up to `top`, has room for it)."""
    if highest <= 5:
        return list(range(0, highest + 1))
    ticks, step = [0, 1, 2, 5], 10
    while ticks[-1] < highest and step <= top:
        ticks.append(step)
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2  # 10, 20, 50, 100, ...
    return ticks


def pass_ticks(count: int) -> list[int]:
    """Passes are whole numbers: every pass, or 1 and each multiple of a 1-2-5 step, at most about 15 ticks."""
    step = 1
    while count / step > 15:
        leading, zeros = int(str(step)[0]), len(str(step)) - 1
        step = {1: 2, 2: 5, 5: 10}[leading] * 10 ** zeros
    return list(range(1, count + 1)) if step == 1 else [1, *range(step, count + 1, step)]


def place_events(passes: Sequence[PlanPass], events: Sequence[tuple[float, str]]) -> list[Mark]:
    """Where each build event goes: the ones between pass k and pass k + 1 (after the last pass: k = its number)
    share the stretch from k to k + 1 in time order, each in its own place, at pass k's residual; a 'reverted'
    mark sits on the mark of its turn (the same journal row, so the same time)."""
    times = [p.ts for p in passes]
    gaps: dict[int, list[tuple[float, str]]] = {}
    for ts, kind in events:
        if kind not in EVENT_STYLE and kind != "reverted":
            continue
        before = bisect.bisect_left(times, ts)  # passes measured before the event
        if before:
            gaps.setdefault(before, []).append((ts, kind))
    marks: list[Mark] = []
    for before, in_gap in sorted(gaps.items()):
        turns = [(ts, kind) for ts, kind in in_gap if kind != "reverted"]
        turn_times = {ts for ts, _ in turns}
        slots = turns + [(ts, kind) for ts, kind in in_gap if kind == "reverted" and ts not in turn_times]
        slots.sort()
        residual = max(passes[before - 1].residual, 0)
        x_of: dict[float, float] = {}
        for index, (ts, kind) in enumerate(slots):
            x = before + 0.15 + 0.7 * (index + 0.5) / len(slots)
            x_of.setdefault(ts, x)
            marks.append(Mark(x, residual, kind, ts))
        marks += [Mark(x_of[ts], residual, "reverted", ts) for ts, kind in in_gap if kind == "reverted" and ts in turn_times]
    return marks


def fit_line(segment: Sequence[PlanPass], fit: Fit, end: int) -> tuple[list[float], list[float]]:
    """The fitted line over its window, ending at pass number `end`: straight on the log(r + 0.5) axis through the
    median intercept (Theil-Sen's), and cut where it reaches the zero row: it never claims fewer than no items."""
    window = [max(p.residual, 0) for p in segment[-fit.window:]]
    start = end - fit.window + 1
    slope = math.log(fit.q)
    intercept = statistics.median(math.log(r + OFFSET) - slope * (start + i) for i, r in enumerate(window))
    xs = [float(start), float(end)]
    if slope < 0:
        crossing = (math.log(OFFSET) - intercept) / slope
        if crossing <= start:
            return [], []
        xs[1] = min(xs[1], crossing)
    return xs, [max(0.0, math.exp(intercept + slope * x) - OFFSET) for x in xs]


def _title(diagnosis: Diagnosis, simulated: bool, canon_version: int | None) -> str:
    label = diagnosis.label
    fit = diagnosis.fit
    words = {
        "converged": "converged: the latest pass found nothing",
        "converging": "converging",
        "stalled": "stalled above zero: a wrong basin?",
        "oscillating": "oscillating: no fixed point, canon needs fixing",
        "flat": "flat: no progress from the start",
        "diverging": "diverging: the residual grows",
        "insufficient": "too few passes to judge",
    }[label]
    if label == "insufficient" and canon_version is not None:
        words += f" (canon v{canon_version}: {diagnosis.reason})"
    elif fit is not None and label != "insufficient":
        interval = fit.interval
        words += (f"  (q = {fit.q:.2f} [{interval[0]:.2f}, {interval[1]:.2f}])" if interval is not None
                  else f"  (q = {fit.q:.2f}; {fit.window} passes, too few for an interval)")
    return ("SIMULATED agent: " if simulated else "") + words


def _place_canon_labels(fig: Figure, ax: Axes, labels: list[tuple[float, Text]]) -> None:
    """Canon-version labels stay inside the axes and off each other: one that would run past the right edge goes
    to the left of its line, and one that would cover an earlier one moves a row down."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg's, after a draw
    frame = ax.get_window_extent(renderer)
    placed: list[Bbox] = []
    for boundary, text in labels:
        box = text.get_window_extent(renderer)
        if box.x1 > frame.x1:
            text.set_x(boundary - 0.05)
            text.set_horizontalalignment("right")
            box = text.get_window_extent(renderer)
        while any(box.overlaps(other) for other in placed) and box.y0 > frame.y0 + frame.height * DATA_TOP:
            text.set_y(text.get_position()[1] - box.height * 1.15 / frame.height)
            box = text.get_window_extent(renderer)
        placed.append(box)


def _legend_below(fig: Figure, handles: list[Any], labels: list[str]) -> None:
    """The legend under the axes, where it cannot cover a label or a point, in as many columns as fit the width."""
    fig.canvas.draw()
    if not handles:
        return
    width = fig.get_window_extent().width
    for columns in range(min(4, len(handles)), 0, -1):
        legend = fig.legend(handles, labels, loc="outside lower center", ncol=columns, fontsize=8, frameon=False)
        legend.set_gid("legend")
        fig.canvas.draw()
        if legend.get_window_extent().width <= width - 10 or columns == 1:
            return
        legend.remove()


def figure(history: History, *, simulated: bool = False, unmeasured: int = 0,
           blocked: Sequence[str] = ()) -> tuple[Figure, Diagnosis]:
    """The plot as a matplotlib figure, laid out and drawn (not saved). It has its own canvas and is no part of
    pyplot's registry, so nothing needs closing. blocked: the items blocked now, waiting for a person."""
    passes = list(history.passes)
    segment = history.current_segment()
    diagnosis = diagnose_segment(segment)
    lanes = history.lanes
    fig = Figure(figsize=(9, 7.6 if lanes else 5.8), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    if lanes:
        ax, strip, lanes_ax = fig.subplots(3, 1, height_ratios=(3, 0.8, 1.25))
        draw_lanes(lanes_ax, lanes)
    else:
        ax, strip = fig.subplots(2, 1, height_ratios=(3, 0.8))
    ax.set_gid("residual-axes")
    ax.set_yscale("function", functions=(_to_axis, _from_axis))
    start = 1
    for number, segment_passes in enumerate(history.segments()):
        seg_x = list(range(start, start + len(segment_passes)))
        start += len(segment_passes)
        ax.plot(seg_x, [max(p.residual, 0) for p in segment_passes], "o-", color="#1f77b4", lw=1.8, ms=5, zorder=3,
                label="open items per plan pass" if number == 0 else None, gid="residual")
    held = [(index + 1, p.held_back_only) for index, p in enumerate(passes) if p.held_back_only]
    if held:  # the part of the residual that only held-back tests see: build's sensors cannot, no agent is told why
        ax.plot([x for x, _ in held], [n for _, n in held], "D", color="#8c564b", ms=11, mfc="none", mew=1.5, ls="none",
                zorder=4, gid="held-back", label="of which held-back tests alone fail")
    canon_labels = []
    for index, p in enumerate(passes):
        if index and p.canon_version != passes[index - 1].canon_version:
            ax.axvline(index + 0.5, color="#999", ls="--", lw=1)
            canon_labels.append((index + 0.5, ax.text(index + 0.55, 0.98, f"canon v{p.canon_version}", va="top",
                                                      transform=ax.get_xaxis_transform(), fontsize=8, color="#555",
                                                      gid="canon-label")))
    fit = diagnosis.fit
    if fit is not None and segment and diagnosis.label != "insufficient":
        fitted_x, fitted_y = fit_line(segment, fit, len(passes))  # the current segment is the tail of the series
        if fitted_x:
            ax.plot(fitted_x, fitted_y, "-", color="#ff7f0e", lw=2.2, alpha=0.85, gid="fit",
                    label=f"fit over last {fit.window} passes: q = {fit.q:.2f}")
    certified_passes = {c["pass_seq"] for c in history.certificates}
    cert_x = [i + 1 for i, p in enumerate(passes) if p.started_seq in certified_passes]
    if cert_x:
        ax.plot(cert_x, [0] * len(cert_x), "*", color="#2ca02c", ms=16, gid="certificate",
                label="certificate (fresh pass found nothing)")
    marks = place_events(passes, [*history.events, *((ts, "person") for ts, _ in history.person)])
    size = 8.0 if len(passes) <= 30 else max(3.5, 8.0 * 30 / len(passes))  # a long run's marks must not hide its line
    for kind, (marker, color, label) in EVENT_STYLE.items():
        of_kind = [m for m in marks if m.kind == kind]
        if of_kind:
            stands_out = kind in ("blocked", "agent_failed", "round")  # the marks a person must act on stay large, on top
            ax.plot([m.x for m in of_kind], [m.residual for m in of_kind], marker, color=color,
                    ms=10 if stands_out else size, mew=2.2 if kind == "blocked" else 1.0, ls="none",
                    alpha=0.95 if stands_out else 0.75, zorder=4 if stands_out else 2, label=label, gid=f"event:{kind}")
    _label_marks(ax, marks, history)
    reverted = [m for m in marks if m.kind == "reverted"]
    if reverted:
        marker, color, label = REVERTED_STYLE
        ax.plot([m.x for m in reverted], [m.residual for m in reverted], marker, ms=size * 1.75, ls="none", mfc="none",
                mec=color, mew=1.4, label=label, gid="event:reverted")
    bias = [p.bias for p in passes]
    handles, labels = ax.get_legend_handles_labels()
    if any(bias):
        ax2 = ax.twinx()
        ax2.bar(range(1, len(passes) + 1), bias, width=0.35, color="#e377c2", alpha=0.35,
                label="build claimed done, plan found open")
        ax2.set_ylabel("self-assessment gap (items)", color="#a05090", fontsize=9)
        ax2.set_ylim(0, max(bias) * 4)
        ax2.yaxis.set_major_locator(MaxNLocator(integer=True))
        more_handles, more_labels = ax2.get_legend_handles_labels()
        handles, labels = handles + more_handles, labels + more_labels
    ax.set_xlabel("plan pass")
    ax.set_ylabel("residual: open items (log(n + 0.5), as fitted)", fontsize=9)
    highest = max([p.residual for p in passes] + [1])
    low, high = float(_to_axis(0)), float(_to_axis(highest))
    span = (high - low) / (DATA_TOP - DATA_BOTTOM)
    bottom, top = float(_from_axis(low - DATA_BOTTOM * span)), float(_from_axis(low + (1 - DATA_BOTTOM) * span))
    ax.set_ylim(bottom, top)
    ticks = residual_ticks(highest, top)
    ax.set_yticks(ticks, [str(t) for t in ticks])
    ax.yaxis.set_minor_locator(NullLocator())
    right = max([max(len(passes), 1) + 0.5] + [m.x + max(0.35, 0.025 * len(passes)) for m in marks])
    ax.set_xlim(0.5, right)
    ax.set_xticks(pass_ticks(len(passes)))
    draw_turns(strip, passes, history.events, (0.5, right))
    notes = []
    if blocked:  # no pass will go lower until a person acts: an estimate of passes left would mislead
        shown = ", ".join(blocked[:3]) + (f" and {len(blocked) - 3} more" if len(blocked) > 3 else "")
        notes.append(f"{len(blocked)} item(s) BLOCKED, waiting for a person: {shown} (build-loop unblock)")
    elif fit is not None and fit.passes_left and diagnosis.label == "converging":
        notes.append(f"about {fit.passes_left} pass(es) left")
    if unmeasured:
        notes.append(f"{unmeasured} requirement(s) unmeasured (the metric is blind there)")
    if diagnosis.cycling_requirements:
        notes.append("cycling: " + ", ".join(diagnosis.cycling_requirements))
    # Above the axes, under the title, where no data, label or marker can be
    ax.set_title(_title(diagnosis, simulated, passes[-1].canon_version if passes else None), fontsize=11, loc="left",
                 pad=6 + 11 * len(notes))
    if notes:
        ax.annotate("\n".join(notes), xy=(0, 1), xycoords="axes fraction", xytext=(0, 4), textcoords="offset points",
                    ha="left", va="bottom", fontsize=8.5, color="#333", gid="notes")
    ax.grid(True, which="major", axis="y", alpha=0.25)
    ax.spines[["top"]].set_visible(False)
    _legend_below(fig, handles, labels)
    _place_canon_labels(fig, ax, canon_labels)
    return fig, diagnosis


LABELS_SHOWN = 24  # item labels past this many would hide the marks: then only blocks, rounds and a person's acts


def _label_marks(ax: Axes, marks: Sequence[Mark], history: History) -> None:
    """Which requirement each run of marks is about (once per run of one item's turns in a gap), and what a person did
    at each of their marks."""
    item_at = dict(history.items)
    said = dict(history.person)
    labels: list[tuple[Mark, str, str]] = []
    last: tuple[int, str] | None = None
    for mark in sorted((m for m in marks if m.kind != "reverted"), key=lambda m: m.x):
        if mark.kind == "person":
            labels.append((mark, said.get(mark.ts, "a person"), "person-label"))
            last = None
            continue
        item = item_at.get(mark.ts, "")
        run = (int(mark.x), item)
        if item and run != last:
            labels.append((mark, item, "item-label"))
        last = run
    items = [label for label in labels if label[2] == "item-label"]
    if len(items) > LABELS_SHOWN:
        labels = [label for label in labels if label[2] == "person-label" or label[0].kind in ("blocked", "round")]
    for mark, text, gid in labels:
        ax.annotate(text, xy=(mark.x, mark.residual), xytext=(0, 9 if gid == "item-label" else 12),
                    textcoords="offset points", ha="center", va="bottom", fontsize=6.5 if gid == "item-label" else 7.5,
                    color="#444" if gid == "item-label" else "#8a6100", rotation=0 if gid == "item-label" else 30,
                    gid=gid, annotation_clip=True)


def draw_turns(ax: Axes, passes: Sequence[PlanPass], events: Sequence[tuple[float, str]], xlim: tuple[float, float]) -> None:
    """Under the residual, the turns build took between two plan passes (after the last: since it), stacked by what
    came of them: a tall bar is turns burning, an empty gap marked 'idle' is nobody working."""
    ax.set_gid("turns-axes")
    times = [p.ts for p in passes]
    counts: dict[int, dict[str, int]] = {}
    for ts, kind in events:
        if kind in TURN_KINDS:
            gap = bisect.bisect_left(times, ts)
            if gap:
                counts.setdefault(gap, {}).setdefault(kind, 0)
                counts[gap][kind] += 1
    highest = max((sum(found.values()) for found in counts.values()), default=0)
    for gap in range(1, len(passes) + 1):
        found = counts.get(gap, {})
        bottom = 0
        for kind in TURN_KINDS:
            if found.get(kind):
                ax.bar(gap + 0.5, found[kind], bottom=bottom, width=0.6, color=EVENT_STYLE[kind][1], gid=f"turns:{kind}")
                bottom += found[kind]
        if bottom:
            ax.text(gap + 0.5, bottom, str(bottom), ha="center", va="bottom", fontsize=7, gid="turns-count")
        elif gap < len(passes):  # after the last pass nothing has happened yet, which is not idling
            ax.text(gap + 0.5, 0, "idle", ha="center", va="bottom", fontsize=7, color="#999", gid="turns-idle")
    ax.set_xlim(*xlim)
    ax.set_ylim(0, max(highest, 1) * 1.35)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=3))
    ax.set_xticks(pass_ticks(len(passes)))
    ax.set_ylabel("turns", fontsize=8)
    ax.set_xlabel("build's turns between plan passes (kept green, rolled back red, stalled grey; 'idle': none)",
                  fontsize=8)
    ax.tick_params(labelsize=7)
    ax.spines[["top", "right"]].set_visible(False)


LANE_COLOURS = {"keep": "#2ca02c", "rollback": "#d62728", "stall": "#7f7f7f"}


def draw_lanes(ax: Axes, lanes: Sequence[LaneTurn]) -> None:
    """The parallel workers of the latest run: one row per lane, one bar per turn over wall-clock time, coloured by
    what came of it; the title gives the throughput."""
    ax.set_gid("lanes-axes")
    origin = min(turn.start for turn in lanes)
    scale, unit = (60.0, "min") if max(turn.end for turn in lanes) - origin > 300 else (1.0, "s")
    for turn in lanes:
        ax.barh(turn.lane, (turn.end - turn.start) / scale, left=(turn.start - origin) / scale, height=0.6,
                color=LANE_COLOURS.get(turn.decision, "#bcbd22"), edgecolor="white", gid=f"lane-turn:{turn.decision}")
    count = max(turn.lane for turn in lanes)
    ax.set_yticks(range(1, count + 1), [f"lane {n}" for n in range(1, count + 1)])
    ax.set_ylim(count + 0.6, 0.4)
    ax.set_xlim(0, max(turn.end - origin for turn in lanes) / scale * 1.02)
    ax.set_xlabel(f"wall-clock time of the latest run ({unit}); bars: turns (green kept, red rolled back, grey stalled)")
    kept = sum(turn.decision == "keep" for turn in lanes)
    minutes = max((max(turn.end for turn in lanes) - origin) / 60.0, 1e-9)
    ax.set_title(f"{count} workers: {kept} kept of {len(lanes)} turns, {kept / minutes:.1f} kept per minute",
                 fontsize=10, loc="left")
    ax.grid(True, axis="x", alpha=0.25)
    ax.spines[["top", "right"]].set_visible(False)


def draw(history: History, output: Path, *, simulated: bool = False, unmeasured: int = 0,
         blocked: Sequence[str] = ()) -> Diagnosis:
    fig, diagnosis = figure(history, simulated=simulated, unmeasured=unmeasured, blocked=blocked)
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output)
    return diagnosis

