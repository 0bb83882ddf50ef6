"""Helpers the benchmarks share: temp workspaces and medians."""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

from canon.store import CanonStore
from shared.app.init import init_workspace
from shared.workspace import Workspace


def workspace(root: Path, canon_text: str, *, backend: str, extra: str = "") -> Workspace:
    ws = init_workspace(root, example=False)
    text = ws.config_file.read_text().replace('backend = "landlock"', f'backend = "{backend}"')
    ws.config_file.write_text(text + extra)
    store = CanonStore(ws.canon)
    store.commit({"requirements/bench.md": canon_text}, "benchmark canon", {"added": ["(generated)"]})
    return Workspace.open(ws.root)


def fill_code(ws: Workspace, files: int) -> None:
    for index in range(files):
        folder = ws.code / "src" / f"d{index // 500:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index:05d}.py").write_text(f"X = {index}\n")
    ws.code_repo().commit_all(f"{files} files", {}, role="init")


def timed(action: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return times


def median_ms(times: list[float]) -> float:
    return statistics.median(times) * 1000
