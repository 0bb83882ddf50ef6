"""Wall time to certified with 1, 2 and 4 parallel build workers, side by side in one run.

    python scripts/bench_parallel.py [--items 12] [--turn 4] [--workers 1,2,4] [--backend landlock] [--repeat 1] [--ray]

Each configuration gets a fresh workspace with the same canon: ITEMS independent requirements, each granting one
file of its own (disjoint scopes) and checked by one command. The agent is SIMULATED (tests/helpers/agents/parts.py,
a scripted stand-in for an LLM): it sleeps --turn seconds, standing in for a model's think time, then writes the
item's file. Timed: from the start of `build-loop run` (after plan's first pass) until plan-loop certifies the
result, which includes every governed turn (checkpoint reading, sandboxed agent, fence, sensors), every integration
onto main, and the certifying plan pass. Printed: the median per configuration and its speed-up over 1 worker.

--ray adds "ray": 4 workers whose turns run as tasks on a local two-node Ray cluster started for the run with
`ray start` (tests/helpers/ray_cluster.py: each node offers 1 CPU and 2 agent slots; a turn asks half a CPU), so
every turn also pays for its bundles and a fresh Ray worker process.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from shared.app.init import init_workspace  # noqa: E402
from spec_loop.draft import Draft  # noqa: E402
from spec_loop.service import SpecService  # noqa: E402

AGENT = ROOT / "tests" / "helpers" / "agents" / "parts.py"


def canon(items: int) -> str:
    blocks = [f"## P-{n:02d}: part {n:02d}\npriority: 2\npaths: parts/p{n:02d}.txt\nchecks:\n"
              f"  - grep -qx 'part {n:02d}' parts/p{n:02d}.txt\n\nparts/p{n:02d}.txt says which part it is.\n"
              for n in range(1, items + 1)]
    return "---\narea: parts\n---\n\n" + "\n".join(blocks)


def make_workspace(root: Path, *, items: int, workers: int, turn: float, backend: str, ray_address: str = "") -> Path:
    ws = init_workspace(root, example=False)
    text = ws.config_file.read_text().replace('backend = "landlock"', f'backend = "{backend}"')
    text = text.replace('agent = "sim"', 'agent = "parts"').replace("[build]", f"[build]\nworkers = {workers}", 1)
    text += f'\n[agents.parts]\npreset = "command"\ncommand = "{sys.executable} {AGENT} --sleep {turn}"\n'
    if ray_address:
        text += f'\n[cluster]\nbackend = "ray"\naddress = "{ray_address}"\ncpus_per_turn = 0.5\n'
    ws.config_file.write_text(text)
    from shared.workspace import Workspace

    spec = SpecService(Workspace.open(ws.root))
    with spec.locked():
        decision = spec.decide(Draft("parts.md", "requirements/parts.md", canon(items).encode()), source="benchmark")
    spec.close()
    assert decision.accepted, decision.problems
    return ws.root


def loop(program: str, *args: str) -> list[str]:
    return [sys.executable, "-m", {"plan-loop": "plan_loop", "build-loop": "build_loop"}[program], *args]


def time_to_certified(root: Path) -> float:
    first = subprocess.run(loop("plan-loop", "once", "-w", str(root)), capture_output=True, text=True, check=True)
    assert "residual" in first.stdout, first.stdout
    started = time.perf_counter()
    for _ in range(3):  # a turn the fence or the integrator turned back is tried again on the next round
        build = subprocess.Popen(loop("build-loop", "run", "-w", str(root)), stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
        assert build.stdout is not None
        for line in build.stdout:
            if "waiting for plan-loop to re-measure" in line or "blocked" in line:
                break
        build.send_signal(signal.SIGTERM)
        build.communicate(timeout=120)
        plan = subprocess.run(loop("plan-loop", "once", "-w", str(root)), capture_output=True, text=True, check=True)
        if "CERTIFIED" in plan.stdout:
            return time.perf_counter() - started
    raise SystemExit(f"{root}: not certified after 3 rounds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=12)
    parser.add_argument("--turn", type=float, default=4.0, help="seconds the simulated agent thinks per turn")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--backend", default="landlock", choices=("landlock", "none"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--ray", action="store_true", help="also 4 workers on a local two-node Ray cluster")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        address = ""
        if args.ray:
            from tests.helpers.ray_cluster import ray_cluster

            address = stack.enter_context(ray_cluster()).address
        measure(args, address)


def measure(args: argparse.Namespace, ray_address: str) -> None:
    counts: list[int | str] = [int(n) for n in args.workers.split(",")] + (["ray"] if ray_address else [])
    print(f"{args.items} independent items, SIMULATED agent turn {args.turn:g} s, isolation {args.backend}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    results: dict[int | str, list[float]] = {n: [] for n in counts}
    with tempfile.TemporaryDirectory(prefix="bench-parallel-") as tmp:
        for attempt in range(args.repeat):
            for workers in counts:  # interleaved, so a change in the machine's load touches every configuration
                root = make_workspace(Path(tmp) / f"w{workers}-{attempt}", items=args.items,
                                      workers=4 if workers == "ray" else int(workers), turn=args.turn,
                                      backend=args.backend, ray_address=ray_address if workers == "ray" else "")
                results[workers].append(time_to_certified(root))
    one = statistics.median(results[counts[0]])
    print(f"{'workers':>8} {'to certified (median s)':>24} {'speed-up':>9}  runs")
    for workers in counts:
        median = statistics.median(results[workers])
        label = "4 on ray" if workers == "ray" else str(workers)
        print(f"{label:>8} {median:>24.1f} {one / median:>8.2f}x  {', '.join(f'{t:.1f}' for t in results[workers])}")


if __name__ == "__main__":
    main()
