"""The convergence plot people read: residual per plan pass on a log axis, the fitted line with q, the
diagnosis, and the events. The only module that imports matplotlib."""
from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from shared.monitor import Diagnosis
from shared.series import History, diagnose_segment, read_history
from shared.workspace import Workspace

ZERO = 0.5  # where a residual of 0 sits on the log axis
EVENT_STYLE = {
    "rollback": ("v", "#d62728", "rollback"),
    "stall": ("o", "#bbbbbb", "stall (turn changed nothing)"),
    "climb": ("^", "#9467bd", "ladder climb"),
    "blocked": ("x", "#8c564b", "item blocked"),
    "interrupted": ("d", "#7f7f7f", "interrupted"),
    "agent_failed": ("s", "#ff7f0e", "agent failed to run"),
}


def _title(diagnosis: Diagnosis, simulated: bool) -> str:
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
    if fit is not None and label not in ("insufficient",):
        words += f"  (q = {fit.q:.2f} [{fit.q_low:.2f}, {fit.q_high:.2f}])"
    return ("SIMULATED agent: " if simulated else "") + words


def draw(history: History, output: Path, *, simulated: bool = False, unmeasured: int = 0) -> Diagnosis:
    passes = list(history.passes)
    segment = history.current_segment()
    diagnosis = diagnose_segment(segment)
    fig, ax = plt.subplots(figsize=(9, 5.2), dpi=110)
    ax.set_yscale("log")
    xs = list(range(1, len(passes) + 1))
    start = 1
    for number, segment_passes in enumerate(history.segments()):
        seg_x = list(range(start, start + len(segment_passes)))
        start += len(segment_passes)
        seg_y = [max(p.residual, 0) or ZERO for p in segment_passes]
        ax.plot(seg_x, seg_y, "o-", color="#1f77b4", lw=1.8, ms=5,
                label="open items per plan pass" if number == 0 else None)
    for index, p in enumerate(passes):
        if index and p.canon_version != passes[index - 1].canon_version:
            ax.axvline(index + 0.5, color="#999", ls="--", lw=1)
            ax.text(index + 0.55, 0.98, f"canon v{p.canon_version}", transform=ax.get_xaxis_transform(),
                    va="top", fontsize=8, color="#555")
    fit = diagnosis.fit
    if fit is not None and segment and diagnosis.label != "insufficient":
        end = len(passes)  # the current segment is the tail of the series
        start = end - fit.window + 1
        ys = [max(p.residual, 0) for p in segment[-fit.window:]]
        anchor = math.exp(sum(math.log(y + 0.5) for y in ys) / len(ys))
        middle = (start + end) / 2
        fitted_x = [start, end]
        fitted_y = [max(ZERO * 0.8, anchor * fit.q ** (x - middle) - 0.5) for x in fitted_x]
        ax.plot(fitted_x, fitted_y, "-", color="#ff7f0e", lw=2.2, alpha=0.85,
                label=f"fit over last {fit.window} passes: q = {fit.q:.2f}")
    certified_passes = {c["pass_seq"] for c in history.certificates}
    cert_x = [i + 1 for i, p in enumerate(passes) if p.started_seq in certified_passes]
    if cert_x:
        ax.plot(cert_x, [ZERO] * len(cert_x), "*", color="#2ca02c", ms=16, label="certificate (fresh pass found nothing)")
    pass_times = [p.ts for p in passes]
    seen: set[str] = set()
    for ts, kind in history.events:
        if kind not in EVENT_STYLE or not passes:
            continue
        before = bisect.bisect_left(pass_times, ts)  # passes measured before the event
        if before == 0:
            continue
        marker, color, label = EVENT_STYLE[kind]
        level = max(passes[before - 1].residual, 0) or ZERO
        ax.plot([before + 0.5], [level], marker, color=color, ms=8, ls="none", alpha=0.85,
                label=None if kind in seen else label)
        seen.add(kind)
    bias = [p.bias for p in passes]
    if any(bias):
        ax2 = ax.twinx()
        ax2.bar(xs, bias, width=0.35, color="#e377c2", alpha=0.35, label="build claimed done, plan found open")
        ax2.set_ylabel("self-assessment gap (items)", color="#a05090", fontsize=9)
        ax2.set_ylim(0, max(bias) * 4)
        ax2.legend(loc="lower left", fontsize=8, frameon=False)
    ax.set_xlabel("plan pass")
    ax.set_ylabel("residual: open fix_plan items (log scale; 0 drawn at the bottom)")
    ax.set_ylim(ZERO * 0.6, max([p.residual for p in passes] + [1]) * 2.5)
    ax.set_xlim(0.5, max(len(passes), 1) + 0.5)
    ax.set_yticks([ZERO, 1, 2, 5, 10, 20, 50, 100, 1000][: 2 + int(math.log10(max([p.residual for p in passes] + [1])) * 3 + 1)])
    ax.set_yticklabels(["0", "1", "2", "5", "10", "20", "50", "100", "1000"][: len(ax.get_yticks())])
    ax.set_title(_title(diagnosis, simulated), fontsize=11, loc="left")
    notes = []
    if fit is not None and fit.passes_left and diagnosis.label == "converging":
        notes.append(f"about {fit.passes_left} pass(es) left")
    if unmeasured:
        notes.append(f"{unmeasured} requirement(s) unmeasured (the metric is blind there)")
    if diagnosis.cycling_requirements:
        notes.append("cycling: " + ", ".join(diagnosis.cycling_requirements))
    if notes:
        ax.text(0.99, 0.02, "\n".join(notes), transform=ax.transAxes, ha="right", va="bottom", fontsize=8.5, color="#333")
    ax.grid(True, which="major", axis="y", alpha=0.25)
    ax.legend(loc="upper right", fontsize=8, frameon=False)
    ax.spines[["top"]].set_visible(False)
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output)
    plt.close(fig)
    return diagnosis


def draw_workspace(ws: Workspace, output: Path) -> Diagnosis:
    from shared.status import status

    info = status(ws)
    return draw(read_history(ws), output, simulated=info["agent"].startswith("SIMULATED"), unmeasured=len(info["unmeasured"]))


def watch_and_draw(ws: Workspace, output: Path, echo: Callable[[str], None]) -> None:
    """Redraw on every journal change (watchdog, debounced) until interrupted."""
    from shared.daemon import Stopper
    from shared.watch import Watcher
    from shared.workspace import ROLES

    stopper = Stopper().install()
    folders = [(ws.role_dir(role), False) for role in ROLES]
    echo(f"wrote {output} ({draw_workspace(ws, output).label}); watching the journals, Ctrl-C to stop")
    with Watcher(folders, debounce=0.5, wanted=lambda p: p.name.startswith("journal.db")) as watcher:
        while not stopper.stopping:
            if watcher.wait(3600, stopper.event):
                echo(f"redrew {output} ({draw_workspace(ws, output).label})")
