"""A plan pass over N requirements with cheap checks, cold and memoized, measured side by side.

    python scripts/bench_plan.py [--sizes 10,100,1000] [--repeat 3]

Cold: the memo is ignored (as `plan-loop certify` does). Memoized: the same (V, C) again, so every
check's key matches and none runs. Both with isolation 'none' and 'landlock' (each check then starts
through the Landlock wrapper, one interpreter start per check).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from plan_loop.passes import PlanService  # noqa: E402
from scripts._bench import median_ms, timed, workspace  # noqa: E402


def canon(count: int) -> str:
    return "\n".join(f"## B-{n}: requirement {n}\npaths: src/b{n}.py\nchecks:\n  - true\n\nHolds.\n" for n in range(1, count + 1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| requirements | isolation | cold pass (median) | memoized pass (median) | cold / memoized |")
    print("|---:|---|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        for backend in ("none", "landlock"):
            with tempfile.TemporaryDirectory() as tmp:
                ws = workspace(Path(tmp) / "ws", canon(size), backend=backend)
                service = PlanService(ws)
                service.run_pass()  # warm the snapshot export, fill the memo
                cold = timed(lambda s=service: s.run_pass(fresh=True), args.repeat)
                memo = timed(lambda s=service: s.run_pass(), args.repeat)
                service.close()
            print(f"| {size} | {backend} | {median_ms(cold):.0f} ms | {median_ms(memo):.0f} ms | "
                  f"{median_ms(cold) / median_ms(memo):.1f}x |", flush=True)


if __name__ == "__main__":
    main()
