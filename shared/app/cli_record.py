"""banach's commands that read the record: a loop's log, the journals, the monitor's fit and the plot."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from shared.boundary import workspace_option
from shared.workspace import Workspace


@click.command()
@workspace_option
@click.argument("role", type=click.Choice(["spec", "plan", "build"]))
@click.option("-f", "--follow", is_flag=True, help="keep printing as the log grows")
def logs(workspace: Path, role: str, follow: bool) -> None:
    """Show ROLE's log (what the loop printed under supervisord).

    Example: banach logs build -f
    """
    from shared.app.supervisor import log_file

    path = log_file(Workspace.open(workspace), role)
    if not path.exists():
        click.echo(f"no log yet at {path}; start the loops with 'banach up'")
        return
    with path.open(encoding="utf-8", errors="replace") as handle:
        sys.stdout.write(handle.read())
        while follow:
            line = handle.readline()
            if line:
                sys.stdout.write(line)
                sys.stdout.flush()
            else:
                time.sleep(0.3)


@click.group()
def journal() -> None:
    """Read and verify the per-role journals.

    Example: banach journal verify
    """


@journal.command()
@workspace_option
@click.option("--receipts", is_flag=True, help="also check each row's HMAC receipt with the role's key")
@click.pass_context
def verify(ctx: click.Context, workspace: Path, receipts: bool) -> None:
    """Recompute every journal's hash chain; exit 1 naming the role and the first row that does not hold.

    Example: banach journal verify --receipts
    """
    from shared.app.verify import verify_all

    ok, lines = verify_all(Workspace.open(workspace), receipts=receipts)
    for line in lines:
        click.echo(line)
    ctx.exit(0 if ok else 1)


@journal.command()
@workspace_option
@click.argument("role", type=click.Choice(["spec", "plan", "build", "dashboard"]))
@click.option("--kind", "kinds", multiple=True, metavar="KIND",
              help="only rows of this kind, or of its family (iteration: iteration.started, iteration.ended)")
@click.option("-n", "--last", type=click.IntRange(min=0), default=0, help="only the last N rows (0: all)")
@click.option("--since", type=click.IntRange(min=0), default=0, metavar="SEQ", help="only rows after this one")
@click.option("--json", "as_json", is_flag=True, help="one JSON object a line, with all of each row's data")
@click.option("-f", "--follow", is_flag=True, help="keep printing rows as the role writes them (like tail -f)")
def show(workspace: Path, role: str, kinds: tuple[str, ...], last: int, since: int, as_json: bool, follow: bool) -> None:
    """Read ROLE's journal: one line a row (seq, time, kind, data), filtered. ROLE dashboard is the dashboard's own
    journal: each unblock, pause, resume, restart, plan pass or canon edit done from its page, with who asked.

    Example: banach journal show build --kind iteration.ended -n 20   (or: banach journal show dashboard)
    """
    from shared.app.journal_read import show as show_rows

    show_rows(Workspace.open(workspace), role, kinds=kinds, last=last, since=since, as_json=as_json,
              follow=follow, echo=click.echo)


@click.command()
@workspace_option
@click.option("--series", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="a JSON array of residuals, or one number a line (default: the workspace's plan passes)")
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def monitor(workspace: Path, series: Path | None, as_json: bool) -> None:
    """Fit log q from the residual series and diagnose the loop.

    Example: banach monitor --series residuals.json --json
    """
    from shared.monitor.fit import MIN_INTERVAL_POINTS, diagnose
    from shared.monitor.series import diagnose_segment, read_history, read_series_file

    blocked: list[str] = []
    if series is not None:
        values = read_series_file(series)
        diagnosis = diagnose(values)
    else:
        from canon.store import CanonStore
        from shared.app.status import build_counts

        ws = Workspace.open(workspace)
        segment = read_history(ws).current_segment()
        values = [float(p.residual) for p in segment]
        diagnosis = diagnose_segment(segment)
        counts = build_counts(ws, CanonStore(ws.canon).version())
        blocked = counts["waiting_for_person"]
        between = sorted(set(counts["blocked_ids"]) - set(blocked))  # blocked with rounds left (build.rounds)
    out: dict[str, Any] = {**diagnosis.as_json(), "series": values, "blocked": blocked}
    if as_json:
        click.echo(json.dumps(out, indent=2))
    else:
        interval = (f"90% interval {out['q_interval'][0]:.3f} to {out['q_interval'][1]:.3f}" if out["q_interval"]
                    else f"too few passes for an interval: it needs {MIN_INTERVAL_POINTS}")
        q = f"q = {out['q']:.3f} ({interval})" if out["q"] is not None else "q: n/a"
        window = f"fitted over the last {out['window']} passes" if out["window"] else "no fit yet (too few passes)"
        left = f", passes left {out['passes_left']}" if out["passes_left"] is not None and not blocked else ""
        click.echo(f"{diagnosis.label}: {diagnosis.reason}\n{q}, {window}{left}")
        if blocked:  # the residual cannot reach zero without them: the fit's estimate does not hold
            click.echo(f"{len(blocked)} item(s) BLOCKED, waiting for a person ({', '.join(blocked)}): no pass goes lower "
                       "until they are unblocked (build-loop unblock ITEM) or their requirement changes")
        if between:
            click.echo(f"{len(between)} item(s) blocked in an earlier round ({', '.join(between)}): each gets another "
                       "round when nothing else is ready")


@click.command()
@workspace_option
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="where to write the PNG (default: convergence.png in the workspace)")
@click.option("--watch", is_flag=True, help="redraw whenever a journal changes, until Ctrl-C")
def plot(workspace: Path, output: Path | None, watch: bool) -> None:
    """Draw the residual per plan pass on a log axis, with the fitted line, q and the events.

    Example: banach plot -o convergence.png --watch
    """
    from shared.app.plot import draw_workspace, watch_and_draw

    ws = Workspace.open(workspace)
    target = output or ws.root / "convergence.png"
    if watch:
        watch_and_draw(ws, target, click.echo)
        return
    click.echo(f"wrote {target} ({draw_workspace(ws, target).label})")


COMMANDS = (logs, journal, monitor, plot)
