"""The governor's own cost per iteration, beside a bare loop running the same agent, side by side.

    python scripts/bench_governor.py [--files 1000,10000,50000] [--iterations 15] [--baseline REV]

With --baseline, the same benchmark of commit REV (exported from this repository into a temp folder and
run there as a child, in the same run) is printed beside this tree's, with the ratio.

Each size runs three ways: no isolation; Landlock with isolation.reach = "machine" (a turn reads the whole machine);
Landlock with reach = "turn" (each turn in a view of its own: the namespaces, clones and pivot that costs).

The agent is a no-op (`true`), there are no sensors, and the item's one check fails at the
checkpoint, so every iteration is a stall: checkpoint (refs, index flags; the sensor reading is cached
by commit), prompt, agent turn in its own session, ref guards, fence (git status), rollback. The bare
loop only runs `true` in the same repository, as `while :; do agent; done` would.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from build_loop.governor import Governor, Options  # noqa: E402
from plan_loop.passes import PlanService  # noqa: E402
from scripts._bench import fill_code, median_ms, run_at, table_rows, timed, workspace  # noqa: E402
from shared.workspace import Workspace  # noqa: E402

CANON = "## G-1: never holds\npaths: src/**\nchecks:\n  - false\n\nA check that always fails, so the item stays open.\n"
BUDGETS = "\nmax_attempts = 100000\nstall_patience = 100000"  # every iteration stalls; never block or climb


def baseline(rev: str, files: str, iterations: int) -> dict[tuple[str, str], float]:
    """Governed ms per iteration of commit rev, by (files, isolation), from its own copy of this script."""
    out = run_at(rev, "bench_governor.py", ["--files", files, "--iterations", str(iterations), "--no-sensors"])
    return {(cells[0], cells[1]): float(cells[3].split()[0]) for cells in table_rows(out, 6) if cells[0].isdigit()}


def sensors_rows(iterations: int) -> list[tuple[str, float]]:
    """A reading of the example's sensors for TK-1 (its 4 conformance tests with their canaries, and the scaffolding
    pytest sensor), as build takes one after a turn: median ms, Landlock alone (reach 'machine') and in views."""
    from build_loop.measure import Measurer
    from canon.store import CanonStore
    from plan_loop.passes import PlanService
    from shared.app.init import init_workspace
    from shared.checks.oracle import check_limits
    from shared.contracts.fix_plan import FixPlan

    rows = []
    for reach in ("machine", "turn"):
        with tempfile.TemporaryDirectory() as tmp:
            ws = init_workspace(Path(tmp) / "ws", example=True)
            ws.config_file.write_text(ws.config_file.read_text().replace("[isolation]\n", f'[isolation]\nreach = "{reach}"\n'))
            ws = Workspace.open(ws.root)
            plan = PlanService(ws)
            plan.run_pass()
            plan.close()
            item = next(i for i in FixPlan.model_validate_json(ws.fix_plan_json.read_text()).items if "TK-1" in i.requirements)
            store = CanonStore(ws.canon)
            canon = store.load()
            measurer = Measurer(ws, store, ws.role_dir("build"), check_limits(ws.config))
            canon_dir = measurer.canon_snapshot(canon)
            sensors = measurer.sensors(item, canon, canon_dir)
            scratch = Path(tmp) / "scratch"
            measurer.read(sensors, canon_dir, scratch)  # warm
            read = measurer.read
            rows.append((reach, median_ms(timed(lambda r=read, s=sensors, c=canon_dir, t=scratch: r(s, c, t), iterations))))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", default="1000,10000,50000")
    parser.add_argument("--iterations", type=int, default=15)
    parser.add_argument("--baseline", default="", metavar="REV", help="also measure this commit, side by side")
    parser.add_argument("--no-sensors", action="store_true", help="leave out the table of a sensor reading")
    args = parser.parse_args()
    if not args.no_sensors:
        rows = dict(sensors_rows(args.iterations))
        print("| a reading of TK-1's sensors (4 conformance tests + the scaffolding pytest sensor) | median |")
        print("|---|---:|")
        print(f"| Landlock alone (reach machine) | {rows['machine']:.0f} ms |")
        print(f"| each sensor in a view of its own (reach turn) | {rows['turn']:.0f} ms |")
        print(f"| what views add per reading | {rows['turn'] - rows['machine']:.0f} ms |\n", flush=True)
    before = baseline(args.baseline, args.files, args.iterations) if args.baseline else {}
    extra = f" | {args.baseline[:10]}, per iteration | now / {args.baseline[:10]}" if before else ""
    header = "| files in repo | isolation | bare loop, per turn | governed, per iteration | overhead | governed / bare"
    print(header + extra + " |")
    print("|---:|---|---:|---:|---:|---:" + ("|---:|---:" if before else "") + "|")
    for files in (int(f) for f in args.files.split(",")):
        for backend, reach in (("none", "machine"), ("landlock", "machine"), ("landlock", "turn")):
            with tempfile.TemporaryDirectory() as tmp:
                ws = workspace(Path(tmp) / "ws", CANON, backend=backend)
                text = ws.config_file.read_text().replace("[build]\n", f"[build]{BUDGETS}\n", 1)
                assert BUDGETS in text, "init's banach.toml has no [build] table to put the budgets in"
                text = text.replace(f'backend = "{backend}"', f'backend = "{backend}"\nreach = "{reach}"')
                ws.config_file.write_text(text)
                ws = Workspace.open(ws.root)
                fill_code(ws, files)
                plan = PlanService(ws)
                plan.run_pass()
                plan.close()
                governor = Governor(ws, Options(agent_command="true"))
                governor.iterate()  # warm: the checkpoint reading is cached by commit
                governed = timed(governor.iterate, args.iterations)
                last = governor.iterate()
                assert last.decision == "stall", f"the benchmark measured something else than a stall: {last.message}"
                governor.close()
                bare = timed(lambda code=ws.code: subprocess.run(["true"], cwd=code, check=False), args.iterations)
            g, b = median_ms(governed), median_ms(bare)
            isolation = backend if backend == "none" else f"{backend}, reach {reach}"
            old = before.get((str(files), isolation))
            tail = f" | {old:.1f} ms | {g / old:.2f}x" if old else (" | - | -" if before else "")
            print(f"| {files} | {isolation} | {b:.1f} ms | {g:.1f} ms | {g - b:.1f} ms | {g / b:.0f}x{tail} |", flush=True)


if __name__ == "__main__":
    main()
