"""`banach demo`: the bundled example, the three loops under supervisord, watched until plan certifies."""
from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.app import supervisor
from shared.app.faults import glossary, injected_faults
from shared.app.init import init_workspace
from shared.app.status import labelled, status, strength_texts
from shared.contracts.blocks import unblock_hint
from shared.journal import Journal
from shared.monitor.plot import draw
from shared.monitor.series import read_history
from shared.workspace import Workspace


@dataclass(frozen=True)
class DemoResult:
    workspace: Path
    certified: bool
    summary: str


def _set_seed(ws_root: Path, seed: int) -> None:
    config = ws_root / "banach.toml"
    text = config.read_text()
    config.write_text(re.sub(r"(?m)^(\[sim\][^\[]*?^seed = )\d+", lambda m: f"{m.group(1)}{seed}", text))


def run_demo(directory: Path | None, seed: int | None, budget: float, echo: Callable[[str], None]) -> DemoResult:
    root = directory or Path(tempfile.mkdtemp(prefix="banach-demo-"))
    started = time.monotonic()
    ws = init_workspace(root, example=True)
    if seed is not None:
        _set_seed(ws.root, seed)
        ws = Workspace.open(ws.root)
    echo(f"banach demo: the bundled example (textkit) in {ws.root}")
    echo("banach demo: the agent is SIMULATED: a scripted stand-in for an LLM, with injected faults "
         f"(wrong edits {ws.config.sim.wrong_edit:.0%}, no edit {ws.config.sim.no_edit:.0%}, "
         f"out of scope {ws.config.sim.out_of_scope:.0%}; seed {ws.config.sim.seed})")
    programs = supervisor.up(ws)
    echo("banach demo: supervisord started " + ", ".join(f"{p.role} (pid {p.pid})" for p in programs))
    certified = False
    shown_passes = shown_build = 0
    try:
        while time.monotonic() - started < budget:
            shown_passes, shown_build = _progress(ws, shown_passes, shown_build, echo)
            info = status(ws)
            if info["certified"]:
                certified = True
                break
            if _all_blocked(info):  # nothing is left that build may try: waiting would only spend the budget
                break
            time.sleep(0.5)
        _progress(ws, shown_passes, shown_build, echo)
    finally:
        supervisor.down(ws)
        echo("banach demo: supervisord stopped")
    info = status(ws)
    plot_path = ws.root / "convergence.png"
    history = read_history(ws)
    draw(history, plot_path, simulated=True, unmeasured=len(info["unmeasured"]), blocked=info["build"]["waiting_for_person"])
    build = info["build"]
    elapsed = time.monotonic() - started
    faults = injected_faults(ws)
    caught = [
        "",
        "Injected faults, and what the governor did (each turn also claimed \"SUCCESS: all tests pass\"; no claim "
        "decided anything):",
        *(f"  {fault.line()}" for fault in faults),
        *(["  (none this run: every turn applied the right change)"] if not faults else []),
    ]
    lines = [*caught,
        "",
        "Summary (agent: SIMULATED)",
        f"  certified        {'yes' if info['certified'] else 'NO'}: canon v{info['canon_version']} "
        f"x code {(info['code_commit'] or '')[:12]}, residual {info['residual']}",
        *labelled("  rests on", strength_texts(info["strength"]), 19),
        f"  plan passes      {info['plan_passes']}",
        f"  build iterations {build['iterations']} ({build['keeps']} kept, {build['rollbacks']} rolled back, "
        f"{build['stalls']} stalled, {build['scope_fighting']} with out-of-scope edits reverted)",
        f"  rollbacks        {build['rollbacks']}",
        f"  q                {format(info['q'], '.2f') if info['q'] is not None else 'n/a'}",
        f"  diagnosis        {info['diagnosis']}" + (
            f" (but {build['blocked']} item(s) blocked: no turn runs on them until a person unblocks them)"
            if build["blocked"] else ""),
        *(f"  blocked          {line}" for line in build["blocked_items"]),
        *([f"                   {unblock_hint(ws.config.build.max_attempts * ws.config.build.rounds)}"]
          if build["blocked"] else []),
        f"  unmeasured       {', '.join(info['unmeasured']) or 'none'}",
        f"  plot             {plot_path}",
        f"  journals         {ws.role_dir('spec').parent}/<role>/journal.db (verify: banach journal verify -w {ws.root})",
        f"  time             {elapsed:.1f}s",
        "",
        "What the words mean:",
        *(f"  {line}" for line in glossary(info["canon_version"], info["code_commit"] or "", info["unmeasured"])),
    ]
    return DemoResult(ws.root, bool(info["certified"]) and certified, "\n".join(lines))


def _all_blocked(info: dict[str, Any]) -> bool:
    """Every open item of a current fix_plan is blocked: build will start no turn until a person acts."""
    plan = info["fix_plan"]
    return bool(plan and plan["current"] and plan["items"]
                and set(plan["items"]) <= set(info["build"]["waiting_for_person"]))  # no round left to any of them


def _progress(ws: Workspace, shown_passes: int, shown_build: int, echo: Callable[[str], None]) -> tuple[int, int]:
    plan = Journal.reader(ws.journal_path("plan"))
    if plan is not None:
        with plan:
            passes = plan.rows("pass")
        for number, row in enumerate(passes[shown_passes:], start=shown_passes + 1):
            d = row.data
            tag = " (fresh: certificate)" if d["residual"] == 0 and d.get("fresh") else ""
            echo(f"  plan   pass {number:>3}: canon v{d['canon_version']} x {d['code_commit'][:10]}: "
                 f"residual {d['residual']}{tag}")
        shown_passes = len(passes)
    build = Journal.reader(ws.journal_path("build"))
    if build is not None:
        with build:
            ended = build.rows("iteration.ended")
        for row in ended[shown_build:]:
            d = row.data
            if d.get("decision") == "already_green":
                continue
            extra = f"; reverted out of scope: {', '.join(d['reverted'])}" if d.get("reverted") else ""
            echo(f"  build  iteration {d.get('n'):>3} {d.get('item')}: {d.get('decision')}: {d.get('reason', '')}{extra}")
        shown_build = len(ended)
    return shown_passes, shown_build
