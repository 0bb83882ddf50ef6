"""Measure canon's node or Go tests on a project folder, as plan and build do (shared/measurement/polyglot.py)."""
from __future__ import annotations

import os
from pathlib import Path

from shared.measurement import polyglot
from shared.measurement.conformance import Judgement
from shared.process import run


def measure(run_dir: Path, canon: Path, project: Path, nodes: tuple[str, ...], *, node_modules: Path | None = None,
            go_modules: Path | None = None) -> Judgement:
    """node_modules, go_modules: the environment's, as polyglot.prepare takes them."""
    measured = polyglot.prepare(canon, project, nodes, run_dir, node_modules=node_modules, go_modules=go_modules)
    try:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        outcomes = [run(request) for request in measured.requests(env=env, timeout=120, limits=None)]
        return measured.judge(outcomes)
    finally:
        measured.close()
