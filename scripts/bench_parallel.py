"""Wall time to certified with 1, 2 and 4 parallel build workers, side by side in one run; with --cluster, also
8 turns over a three-node Ray cluster; with --integrator, the integrator's sustained keeps per minute.

    python scripts/bench_parallel.py [--items 12] [--turn 4] [--workers 1,2,4] [--backend landlock] [--repeat 1] [--ray]
    python scripts/bench_parallel.py --issue-44      # = --items 8 --turn 8 --workers 1,4 --cluster --integrator

Each configuration gets a fresh workspace with the same canon: ITEMS independent requirements, each granting one
file of its own (disjoint scopes) and checked by one command. The agent is SIMULATED (tests/helpers/agents/parts.py,
a scripted stand-in for an LLM): it sleeps --turn seconds, standing in for a model's think time, then writes the
item's file. Timed: from the start of `build-loop run` (after plan's first pass) until plan-loop certifies the
result, which includes every governed turn (checkpoint reading, sandboxed agent, fence, sensors), every integration
onto main, and the certifying plan pass. Printed: the median per configuration and its speed-up over 1 worker.

--ray adds "ray": 4 workers whose turns run as tasks on a local two-node Ray cluster started for the run with
`ray start` (tests/helpers/ray_cluster.py: each node offers 1 CPU and 2 agent slots; a turn asks half a CPU), so
every turn also pays for its bundles and a fresh Ray worker process.

--cluster adds "8 on 3 nodes": 8 workers whose turns run on a head and three nodes, each node in a network namespace of
its own with Ray's token authentication on (tests/helpers/ray_netns.py; needs root and iproute2; each node offers
1 CPU and 3 agent slots, the head none; a turn asks a quarter CPU), all on this machine's cores.

--integrator adds the integrator's sustained keeps per minute with 30 lanes (--lanes) handing it changes back to back
for --seconds (scripts/_integrator_load.py): the rate one integrator commits at, against the rate 30 concurrent turns
of --turn seconds would bring it.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
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


def make_workspace(root: Path, *, items: int, workers: int, turn: float, backend: str, ray_address: str = "",
                   cpus: float = 0.5) -> Path:
    ws = init_workspace(root, example=False)
    text = ws.config_file.read_text().replace('backend = "landlock"', f'backend = "{backend}"')
    text = re.sub(r"^agent = \"[^\"]*\"$", "agent = \"parts\"", text, count=1, flags=re.M)
    text = text.replace("[build]", f"[build]\nworkers = {workers}", 1)
    text += f'\n[agents.parts]\npreset = "command"\ncommand = "{sys.executable} {AGENT} --sleep {turn}"\n'
    if ray_address:
        text += f'\n[cluster]\nbackend = "ray"\naddress = "{ray_address}"\ncpus_per_turn = {cpus}\n'
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
    parser.add_argument("--cluster", action="store_true", help="also 8 workers on a head and 3 nodes in namespaces")
    parser.add_argument("--integrator", action="store_true", help="also the integrator's sustained keeps per minute")
    parser.add_argument("--lanes", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--issue-44", action="store_true", help="--items 8 --turn 8 --workers 1,4 --cluster --integrator")
    args = parser.parse_args()
    if args.issue_44:
        args.items, args.turn, args.workers, args.cluster, args.integrator = 8, 8.0, "1,4", True, True
    with contextlib.ExitStack() as stack:
        address = cluster = ""
        if args.ray:
            from tests.helpers.ray_cluster import ray_cluster

            address = stack.enter_context(ray_cluster()).address
        if args.cluster:
            from tests.helpers.ray_netns import netns_cluster

            started = stack.enter_context(netns_cluster(3, slots=3))
            os.environ.update(started.driver_env())
            cluster = started.address
        if args.workers or address or cluster:
            measure(args, address, cluster)
    if args.integrator:
        integrator(args)


def integrator(args: argparse.Namespace) -> None:
    from scripts._integrator_load import sustained

    with tempfile.TemporaryDirectory(prefix="bench-integrator-") as tmp:
        root = make_workspace(Path(tmp) / "ws", items=args.lanes * 12, workers=args.lanes, turn=0, backend=args.backend)
        subprocess.run(loop("plan-loop", "once", "-w", str(root)), capture_output=True, text=True, check=True)
        ceiling = sustained(root, lanes=args.lanes, seconds=args.seconds)
    with tempfile.TemporaryDirectory(prefix="bench-integrator-") as tmp:
        root = make_workspace(Path(tmp) / "ws", items=args.lanes * 12, workers=args.lanes, turn=0, backend=args.backend)
        subprocess.run(loop("plan-loop", "once", "-w", str(root)), capture_output=True, text=True, check=True)
        paced = sustained(root, lanes=args.lanes, seconds=args.seconds, think=args.turn)
    demand = args.lanes * 60.0 / args.turn
    for label, load in (("back to back", ceiling), (f"{args.turn:g} s turns", paced)):
        how = ", ".join(f"{k} {v}" for k, v in sorted(load.how.items()) if ":" in k)
        print(f"integrator, {args.lanes} lanes, {label}: {load.per_minute:.0f} keeps per minute ({load.keeps} keeps in "
              f"{load.seconds:.0f} s; {how})")
    print(f"            {args.lanes} concurrent turns of {args.turn:g} s bring at most {demand:.0f} keeps per minute; "
          f"the integrator's ceiling is {ceiling.per_minute / demand:.1f}x that, and with {args.turn:g} s turns "
          f"{paced.per_minute / demand:.0%} of it were kept")


def measure(args: argparse.Namespace, ray_address: str, cluster: str = "") -> None:
    counts: list[int | str] = [int(n) for n in args.workers.split(",") if n] + (["ray"] if ray_address else []) + (
        ["cluster"] if cluster else [])
    print(f"{args.items} independent items, SIMULATED agent turn {args.turn:g} s, isolation {args.backend}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    results: dict[int | str, list[float]] = {n: [] for n in counts}
    with tempfile.TemporaryDirectory(prefix="bench-parallel-") as tmp:
        for attempt in range(args.repeat):
            for workers in counts:  # interleaved, so a change in the machine's load touches every configuration
                root = make_workspace(Path(tmp) / f"w{workers}-{attempt}", items=args.items,
                                      workers={"ray": 4, "cluster": 8}.get(str(workers)) or int(workers), turn=args.turn,
                                      backend=args.backend, cpus=0.25 if workers == "cluster" else 0.5,
                                      ray_address={"ray": ray_address, "cluster": cluster}.get(str(workers), ""))
                results[workers].append(time_to_certified(root))
    one = statistics.median(results[counts[0]])
    print(f"{'workers':>12} {'to certified (median s)':>24} {'speed-up':>9}  runs")
    for workers in counts:
        median = statistics.median(results[workers])
        label = {"ray": "4 on ray", "cluster": "8 on 3 nodes"}.get(str(workers), str(workers))
        print(f"{label:>12} {median:>24.1f} {one / median:>8.2f}x  {', '.join(f'{t:.1f}' for t in results[workers])}")


if __name__ == "__main__":
    main()
