"""The cost of containment: one run of `true` in its own cgroup with limits, beside one without.

    python scripts/bench_process.py [--runs 50]

Uncontained is what git and other cheap children get (process group and reap tag). Contained adds the
gate (a shell that stops itself until it is in its cgroups), making and removing the cgroups, and the
counters read at the end. Medians of --runs runs each, interleaved so that load hits both alike.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts._bench import median_ms, timed  # noqa: E402
from shared.cgroups import containment_available  # noqa: E402
from shared.process import Limits, Request, run  # noqa: E402

LIMITS = Limits(max_processes=512, memory_bytes=8 * 2**30, file_bytes=10 * 2**20, output_bytes=10 * 2**20)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    missing = containment_available()
    with tempfile.TemporaryDirectory() as tmp:
        kinds = {
            "uncontained (limits=None)": Request(("true",), cwd=Path(tmp), env={"PATH": "/usr/bin:/bin"}),
            "contained, no limits (Limits())": Request(("true",), cwd=Path(tmp), env={"PATH": "/usr/bin:/bin"},
                                                       limits=Limits()),
            "contained, all four limits": Request(("true",), cwd=Path(tmp), env={"PATH": "/usr/bin:/bin"}, limits=LIMITS),
        }
        times: dict[str, list[float]] = {name: [] for name in kinds}
        for _ in range(args.runs):
            for name, request in kinds.items():
                times[name] += timed(lambda request=request: run(request), 1)
    base = median_ms(times["uncontained (limits=None)"])
    print(f"containment: {'available' if not missing else 'NOT available: ' + missing}")
    print("| run of `true` | median, ms | ratio to uncontained |")
    print("|---|---:|---:|")
    for name, samples in times.items():
        print(f"| {name} | {median_ms(samples):.2f} | {median_ms(samples) / base:.2f} |")


if __name__ == "__main__":
    main()
