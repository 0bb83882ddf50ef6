"""`banach plot`: the workspace's convergence plot, drawn once or again on every journal change. The drawing is the
monitor's (shared/monitor/plot.py); this adds what only the workspace knows (a simulated agent, unmeasured
requirements)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from shared.app.status import status
from shared.daemon import Stopper
from shared.monitor.fit import Diagnosis
from shared.monitor.plot import draw
from shared.monitor.series import read_history
from shared.watch import Watcher
from shared.workspace import ROLES, Workspace


def draw_workspace(ws: Workspace, output: Path) -> Diagnosis:
    info = status(ws)
    return draw(read_history(ws), output, simulated=info["agent"].startswith("SIMULATED"), unmeasured=len(info["unmeasured"]),
                blocked=info["build"]["waiting_for_person"])


def watch_and_draw(ws: Workspace, output: Path, echo: Callable[[str], None]) -> None:
    """Redraw on every journal change (watchdog, debounced) until interrupted."""
    stopper = Stopper().install()
    folders = [(ws.role_dir(role), False) for role in ROLES]
    echo(f"wrote {output} ({draw_workspace(ws, output).label}); watching the journals, Ctrl-C to stop")
    with Watcher(folders, debounce=0.5, wanted=lambda p: p.name.startswith("journal.db")) as watcher:
        while not stopper.stopping:
            if watcher.wait(3600, stopper.event):
                echo(f"redrew {output} ({draw_workspace(ws, output).label})")
