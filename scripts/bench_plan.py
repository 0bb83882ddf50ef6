"""A plan pass over N requirements with cheap checks, cold and memoized, measured side by side.

    python scripts/bench_plan.py [--sizes 10,100,1000] [--repeat 3]

Cold: the memo is ignored (as `plan-loop certify` does). Memoized: the same (V, C) again, so every
check's key matches and none runs. With isolation 'none', 'landlock' with reach 'machine' (each check starts through
the Landlock wrapper, one interpreter start per check) and reach 'turn' (each check in a view of its own as well).
With --baseline REV the same passes of commit REV are printed beside, measured in the same run.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from plan_loop.passes import PlanService  # noqa: E402
from scripts._bench import median_ms, run_at, table_rows, timed, workspace  # noqa: E402
from shared.workspace import Workspace  # noqa: E402


def canon(count: int) -> str:
    return "\n".join(f"## B-{n}: requirement {n}\npaths: src/b{n}.py\nchecks:\n  - true\n\nHolds.\n" for n in range(1, count + 1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", default="", metavar="REV", help="also measure this commit, side by side")
    args = parser.parse_args()
    before: dict[tuple[str, str], str] = {}
    if args.baseline:
        out = run_at(args.baseline, "bench_plan.py", ["--sizes", args.sizes, "--repeat", str(args.repeat)])
        before = {(cells[0], cells[1]): cells[2] for cells in table_rows(out, 5) if cells[0].isdigit()}
    extra = f" | {args.baseline[:10]}: cold pass |" if before else " |"
    print("| requirements | isolation | cold pass (median) | memoized pass (median) | cold / memoized" + extra)
    print("|---:|---|---:|---:|---:|" + ("---:|" if before else ""))
    for size in (int(s) for s in args.sizes.split(",")):
        for backend, reach in (("none", "machine"), ("landlock", "machine"), ("landlock", "turn")):
            with tempfile.TemporaryDirectory() as tmp:
                ws = workspace(Path(tmp) / "ws", canon(size), backend=backend)
                text = ws.config_file.read_text()
                ws.config_file.write_text(text.replace(f'backend = "{backend}"', f'backend = "{backend}"\nreach = "{reach}"'))
                service = PlanService(Workspace.open(ws.root))
                service.run_pass()  # warm the snapshot export, fill the memo
                cold = timed(lambda s=service: s.run_pass(fresh=True), args.repeat)
                memo = timed(lambda s=service: s.run_pass(), args.repeat)
                service.close()
            isolation = backend if backend == "none" else f"{backend}, reach {reach}"
            old = before.get((str(size), isolation)) or before.get((str(size), backend), "-")
            print(f"| {size} | {isolation} | {median_ms(cold):.0f} ms | {median_ms(memo):.0f} ms | "
                  f"{median_ms(cold) / median_ms(memo):.1f}x" + (f" | {old} |" if before else " |"), flush=True)


if __name__ == "__main__":
    main()
