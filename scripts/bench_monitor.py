"""The monitor on long residual series, beside a plain least-squares fit of the whole series, in one run.

    python scripts/bench_monitor.py [--lengths 100,10000,100000] [--repeat 5]

The monitor fits a recent window (Theil-Sen over 8 passes) and looks at the whole series only for
level medians, so its cost stays flat where a fit of every pass grows with the series.
"""
from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts._bench import median_ms, timed  # noqa: E402
from shared.monitor.fit import diagnose  # noqa: E402


def least_squares(series: list[float]) -> float:
    ys = [math.log(v + 0.5) for v in series]
    n = len(ys)
    mean_x, mean_y = (n - 1) / 2, sum(ys) / n
    num = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(ys))
    den = sum((x - mean_x) ** 2 for x in range(n))
    return math.exp(num / den)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", default="100,10000,100000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(7)
    print("| passes | monitor diagnose (median) | whole-series least squares (median) | monitor / least squares |")
    print("|---:|---:|---:|---:|")
    for length in (int(x) for x in args.lengths.split(",")):
        series = [max(0, round(1000 * 0.999 ** t + rng.randint(-2, 2))) for t in range(length)]
        ours = median_ms(timed(lambda s=series: diagnose(s), args.repeat))
        plain = median_ms(timed(lambda s=series: least_squares(s), args.repeat))
        print(f"| {length} | {ours:.2f} ms | {plain:.2f} ms | {ours / plain:.2f} |")


if __name__ == "__main__":
    main()
