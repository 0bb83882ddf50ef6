"""The plot of a short real run, checked on what matplotlib drew: whole-number ticks, zero as a row of its own, the
fit never below it, every mark inside the axes, the legend off every label, kept turns and reverted edits marked,
and no q interval from too few passes.

The run: canon v1 with two requirements; a turn that does ST-1 and also writes outside its scope (kept, the
outside file reverted); pass 2; a turn that does nothing (stall) and one that does ST-2 (kept); pass 3 finds
nothing and is certified; canon v2 adds ST-3; pass 5; two turns that do nothing, and ST-3 is blocked (after the
last pass, at the right edge of the plot)."""
from __future__ import annotations

import struct
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from plan_loop.passes import PlanService
from shared.app.plot import draw_workspace
from shared.monitor.fit import Diagnosis
from shared.monitor.plot import draw, figure, pass_ticks, residual_ticks
from shared.monitor.series import History, read_history
from shared.workspace import Workspace
from spec_loop.draft import Draft
from spec_loop.service import SpecService
from tests.helpers.workspaces import cli, custom

pytestmark = pytest.mark.xdist_group("test_plot_short_run")  # one worker makes the module's run once, not once per worker

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

AGENT = '''import os, re, sys
from pathlib import Path
prompt = Path(os.environ["BANACH_PROMPT_FILE"]).read_text()
match = re.search(r"^Requirements:\\s*(.+)$", prompt, re.M)
for rid in [r.strip() for r in match.group(1).split(",")] if match else []:
    Path(f"file{rid.split('-')[1]}.txt").write_text("done\\n")
if "--also-outside" in sys.argv:
    Path("outside.txt").write_text("not in this item's scope\\n")
'''


def requirements(numbers: list[int], area: str) -> str:
    blocks = [f"## ST-{n}: file {n} exists\npaths: file{n}.txt\nchecks:\n  - test -f file{n}.txt\n\nfile{n}.txt exists.\n"
              for n in numbers]
    return f"---\narea: {area}\n---\n\n" + "\n".join(blocks)


@pytest.fixture(scope="module")
def short_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    root = tmp_path_factory.mktemp("short-run")
    with pytest.MonkeyPatch.context() as env:  # the per-test home guard does not reach a module fixture
        env.setenv("HOME", str(root / "home"))
        env.setenv("GIT_CONFIG_GLOBAL", str(root / "home" / ".gitconfig"))
        env.setenv("GIT_CONFIG_NOSYSTEM", "1")
        env.delenv("BANACH_WORKSPACE", raising=False)
        ws = custom(root, requirements([1, 2], "short"), "no_change.py")
        ws.config_file.write_text(ws.config_file.read_text().replace('agent = "scripted"',
                                                                     'agent = "scripted"\nmax_attempts = 2'))
        agent = root / "does_the_item.py"
        agent.write_text(AGENT)

        def build(*args: str) -> None:
            result = cli("build-loop", "once", *args, "--workspace", str(ws.root))
            assert result.returncode == 0, result.stderr

        def plan() -> None:  # what plan-loop once does: a pass, and a fresh one to certify when it finds nothing
            service = PlanService(ws)
            try:
                service.measure()
            finally:
                service.close()

        does_it = f"{sys.executable} {agent}"
        plan()  # pass 1: 2 open
        build("--agent-command", f"{does_it} --also-outside")  # keep ST-1; outside.txt reverted
        plan()  # pass 2: 1 open
        build()  # the configured agent changes nothing: stall
        build("--agent-command", does_it)  # keep ST-2
        plan()  # pass 3: 0 open, and pass 4 certifies it
        spec = SpecService(ws)
        with spec.locked():
            assert spec.decide(Draft("more.md", "requirements/more.md", requirements([3], "more").encode()),
                               source="test").accepted
        spec.close()
        plan()  # pass 5: canon v2, 1 open
        build()
        build()  # the second stall on ST-3 blocks it
        yield Workspace.open(ws.root)


def as_of(history: History, count: int) -> History:
    """The history as it stood when its first `count` passes were in: what the plot showed then."""
    passes = history.passes[:count]
    until = history.passes[count].ts if count < len(history.passes) else float("inf")
    started = {p.started_seq for p in passes}
    return replace(history, passes=passes, certificates=tuple(c for c in history.certificates if c["pass_seq"] in started),
                   events=tuple(e for e in history.events if e[0] < until))


def drawn(history: History) -> tuple[Figure, Axes, Diagnosis]:
    fig, diagnosis = figure(history)
    ax = next(a for a in fig.axes if a.get_gid() == "residual-axes")
    return fig, ax, diagnosis


def artist(ax: Axes, gid: str) -> Line2D:
    found = [line for line in ax.get_lines() if line.get_gid() == gid]
    assert found, f"nothing drawn as {gid}: {[line.get_gid() for line in ax.get_lines()]}"
    return found[0]


def xs(line: Line2D) -> list[float]:
    return [float(x) for x in cast("Sequence[float]", line.get_xdata())]


def ys(line: Line2D) -> list[float]:
    return [float(y) for y in cast("Sequence[float]", line.get_ydata())]


def on_screen(ax: Axes, line: Line2D) -> list[tuple[float, float]]:
    """The line's points in display pixels."""
    return [(float(x), float(y)) for x, y in ax.transData.transform(list(zip(xs(line), ys(line), strict=True)))]


def test_the_run_is_what_the_plot_is_checked_on(short_run: Workspace) -> None:
    history = read_history(short_run)
    assert [(p.residual, p.canon_version) for p in history.passes] == [(2, 1), (1, 1), (0, 1), (0, 1), (1, 2)]
    kinds = [kind for _, kind in history.events if kind != "canon"]
    assert kinds == ["keep", "reverted", "stall", "keep", "stall", "stall", "blocked"]
    keep_time = next(ts for ts, kind in history.events if kind == "keep")
    assert (keep_time, "reverted") in history.events  # the same journal row: the turn that was kept
    assert history.passes[-1].ts < max(ts for ts, _ in history.events)  # the block came after the last pass


def test_y_ticks_are_whole_counts_and_zero_is_a_row_of_its_own(short_run: Workspace) -> None:
    fig, ax, _ = drawn(read_history(short_run))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "1", "2"]
    assert not [t for t in ax.yaxis.get_minorticklabels() if t.get_text()]
    bottom, top = ax.get_ylim()
    assert bottom < 0 < 2 < top
    residual = artist(ax, "residual")
    assert 0 in ys(residual)
    star = artist(ax, "certificate")
    assert ys(star) == [0]
    zero_row = ax.transData.transform((1, 0))[1]
    assert abs(ax.transData.transform((xs(star)[0], ys(star)[0]))[1] - zero_row) < 0.5
    frame = ax.get_window_extent()
    star_radius = star.get_markersize() * fig.dpi / 72 / 2
    assert zero_row - star_radius > frame.y0, "the certificate star is cut by the bottom of the axes"


def test_x_ticks_are_whole_passes(short_run: Workspace) -> None:
    _, ax, _ = drawn(read_history(short_run))
    left, right = ax.get_xlim()
    visible = [x for x in ax.get_xticks() if left <= x <= right]
    assert visible == [1, 2, 3, 4, 5]
    assert [t.get_text() for t in ax.get_xticklabels() if t.get_text()] == ["1", "2", "3", "4", "5"]


def test_kept_turns_and_reverted_edits_are_marked_where_they_happened(short_run: Workspace) -> None:
    fig, ax, _ = drawn(read_history(short_run))
    keeps = artist(ax, "event:keep")
    reverted = artist(ax, "event:reverted")
    stalls = artist(ax, "event:stall")
    blocked = artist(ax, "event:blocked")
    assert len(xs(keeps)) == 2 and len(xs(stalls)) == 3 and len(xs(blocked)) == 1
    # the reverted ring is on the first keep (between passes 1 and 2, at pass 1's residual)
    assert (xs(reverted)[0], ys(reverted)[0]) == (xs(keeps)[0], ys(keeps)[0])
    assert 1 < xs(reverted)[0] < 2 and ys(reverted)[0] == 2
    # the stall and the keep between passes 2 and 3 each have a place of their own, in the order they happened
    between = sorted([(x, "stall") for x in xs(stalls) if 2 < x < 3]
                     + [(x, "keep") for x in xs(keeps) if 2 < x < 3])
    assert [kind for _, kind in between] == ["stall", "keep"]
    legend = next(legend for legend in fig.legends if legend.get_gid() == "legend")
    texts = [t.get_text() for t in legend.get_texts()]
    assert "kept (turn committed)" in texts and "edits outside scope reverted" in texts and "item blocked" in texts


def test_every_mark_is_whole_inside_the_axes(short_run: Workspace) -> None:
    fig, ax, _ = drawn(read_history(short_run))
    frame = ax.get_window_extent()
    marks = [line for line in ax.get_lines() if line.get_gid() and line.get_marker() not in (None, "None", "")]
    assert {line.get_gid() for line in marks} >= {"event:blocked", "event:stall", "certificate", "residual"}
    for line in marks:
        radius = line.get_markersize() * fig.dpi / 72 / 2
        for x, y in on_screen(ax, line):
            assert frame.x0 + radius <= x <= frame.x1 - radius, f"{line.get_gid()} at x={x} is cut by the axes' side"
            assert frame.y0 + radius <= y <= frame.y1 - radius, f"{line.get_gid()} at y={y} is cut by the axes' top or bottom"
    blocked_x = xs(artist(ax, "event:blocked"))[0]
    assert blocked_x > 5  # after the last pass, and still inside (checked above)


def test_the_legend_and_the_labels_cover_nothing_and_stay_on_the_figure(short_run: Workspace) -> None:
    fig, ax, _ = drawn(read_history(short_run))
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg's
    legend = next(legend for legend in fig.legends if legend.get_gid() == "legend").get_window_extent(renderer)
    page = fig.get_window_extent(renderer)
    frame = ax.get_window_extent(renderer)
    labels = [text for text in ax.texts if text.get_gid() == "canon-label"]
    assert [t.get_text() for t in labels] == ["canon v2"]
    label = labels[0].get_window_extent(renderer)
    title = ax.title.get_window_extent(renderer)
    assert not legend.overlaps(label) and not legend.overlaps(frame) and not legend.overlaps(title)
    assert page.x0 <= legend.x0 and legend.x1 <= page.x1 and page.y0 <= legend.y0
    assert frame.x0 <= label.x0 and label.x1 <= frame.x1 and label.y1 <= frame.y1
    points = [point for line in ax.get_lines() for point in on_screen(ax, line)]
    assert all(not (label.x0 <= x <= label.x1 and label.y0 <= y <= label.y1) for x, y in points)
    assert page.x0 <= title.x0 and title.x1 <= page.x1 and title.y1 <= page.y1


def test_the_notes_sit_between_the_title_and_the_axes(short_run: Workspace) -> None:
    fig, _ = figure(read_history(short_run), unmeasured=1)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg's
    notes = next(text for text in ax.texts if text.get_gid() == "notes")
    assert notes.get_text() == "1 requirement(s) unmeasured (the metric is blind there)"
    box, title, frame = (notes.get_window_extent(renderer), ax.title.get_window_extent(renderer),
                         ax.get_window_extent(renderer))
    assert frame.y1 <= box.y0 and box.y1 <= title.y0 and not box.overlaps(title)


def test_the_fit_stops_at_the_zero_row(short_run: Workspace) -> None:
    for count in (3, 4):  # the first canon version, converged: 2, 1, 0 and 2, 1, 0, 0
        _, ax, diagnosis = drawn(as_of(read_history(short_run), count))
        assert diagnosis.label == "converged"
        fit = artist(ax, "fit")
        assert min(ys(fit)) == 0 and all(y >= 0 for y in ys(fit))
        zero_row = ax.transData.transform((1, 0))[1]
        lowest = min(y for _, y in on_screen(ax, fit))
        assert lowest >= zero_row - 0.5, f"the fit is drawn {zero_row - lowest:.1f} px below the zero row"
        assert max(xs(fit)) <= count


def test_no_q_interval_from_fewer_than_four_passes(short_run: Workspace) -> None:
    _, ax, diagnosis = drawn(as_of(read_history(short_run), 3))
    assert diagnosis.fit is not None and diagnosis.fit.window == 3 and diagnosis.fit.interval is None
    assert "q = " in ax.get_title(loc="left") and "too few for an interval" in ax.get_title(loc="left")
    assert "[" not in ax.get_title(loc="left")
    _, ax, diagnosis = drawn(as_of(read_history(short_run), 4))
    assert diagnosis.fit is not None and diagnosis.fit.interval is not None
    low, high = diagnosis.fit.interval
    assert f"[{low:.2f}, {high:.2f}]" in ax.get_title(loc="left")
    _, ax, _ = drawn(read_history(short_run))  # canon v2 has one pass: nothing is judged, and the title says why
    assert "too few passes to judge (canon v2: 1 pass(es)" in ax.get_title(loc="left")
    assert not [line for line in ax.get_lines() if line.get_gid() == "fit"]


def test_the_png_is_written(short_run: Workspace, tmp_path: Path) -> None:
    target = tmp_path / "plot.png"
    assert draw_workspace(short_run, target).label == "insufficient"
    head = target.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (990, 638)  # 9 x 5.8 inches at 110 dpi
    draw(as_of(read_history(short_run), 4), tmp_path / "then.png")
    assert (tmp_path / "then.png").stat().st_size > 10_000


@pytest.mark.parametrize(("highest", "top", "ticks"), [
    (0, 1.4, [0]), (2, 2.9, [0, 1, 2]), (5, 7.6, [0, 1, 2, 3, 4, 5]), (8, 14.2, [0, 1, 2, 5, 10]),
    (6, 9.0, [0, 1, 2, 5]), (37, 80.0, [0, 1, 2, 5, 10, 20, 50]), (900, 5000.0, [0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]),
    (1200, 4000.0, [0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000]),
])
def test_residual_ticks_are_counts_a_person_reads(highest: int, top: float, ticks: list[int]) -> None:
    assert residual_ticks(highest, top) == ticks


@pytest.mark.parametrize(("count", "ticks"), [
    (0, []), (1, [1]), (5, [1, 2, 3, 4, 5]), (16, [1, 2, 4, 6, 8, 10, 12, 14, 16]), (40, [1, 5, 10, 15, 20, 25, 30, 35, 40]),
    (400, [1, 50, 100, 150, 200, 250, 300, 350, 400]),
])
def test_pass_ticks_are_whole_and_few(count: int, ticks: list[int]) -> None:
    assert pass_ticks(count) == ticks


def test_blocked_items_are_said_above_the_plot_instead_of_passes_left(short_run: Workspace) -> None:
    """Issue 29, point 5: a small brown x among the stalls was all a blocked item showed."""
    fig, _ = figure(read_history(short_run), blocked=["TK-4.1a2b3c", "TK-5.4d5e6f"])
    notes = next(text for text in fig.axes[0].texts if text.get_gid() == "notes").get_text()
    assert notes.startswith("2 item(s) BLOCKED, waiting for a person: TK-4.1a2b3c, TK-5.4d5e6f") and "left" not in notes
