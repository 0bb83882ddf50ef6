"""The convergence monitor: fit log q from the residual series and diagnose the loop.

A straight line on a log axis means contraction, and its slope is log q. The fit is Theil-Sen (the
median of pairwise slopes) of log(r + 0.5) over a recent window: zeros are defined, a single outlier
cannot swing it, and Sen's rank interval gives the uncertainty, from MIN_INTERVAL_POINTS passes on.
Labels, checked in this order:

  insufficient  fewer than 3 passes
  converged     the latest pass found nothing
  diverging     q clearly above 1 (the interval's lower end is above 1) and the residual grew
  oscillating   the residual (or the set of open items) keeps revisiting earlier values in a repeating
                pattern (period >= 2) with an amplitude above the noise, and no net decrease: no fixed point
  stalled       it decreased earlier, but over the recent window it makes no net progress and is above 0
  flat          no meaningful decrease from the start, without an oscillation pattern
  converging    q clearly below 1 (the interval's upper end is below 1)
and, when none of these holds, stalled if it ever decreased, otherwise flat.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

WINDOW = 8  # passes fitted
STALL_WINDOW = 5  # passes that must show no progress for a stall
NOISE = 1.0  # counts: a residual that moves by one item is noise
OFFSET = 0.5  # the fit is of log(r + OFFSET), so a residual of 0 has a finite place
Z90 = 1.645
# Below 4 points Sen's 90% interval is not one: with 2 it is the single slope (it never covers the truth), with 3
# it is already the widest the data allow (smallest to largest pairwise slope) and still covers a flat series only
# 2 times in 3 (Kendall's S is at an extreme with probability 1/6 each way); with 4 it covers 11 in 12.
MIN_INTERVAL_POINTS = 4

LABELS = ("insufficient", "converged", "diverging", "oscillating", "stalled", "flat", "converging")


@dataclass(frozen=True)
class Fit:
    q: float
    q_low: float
    q_high: float
    window: int
    passes_left: int | None  # predicted passes to reach zero, when q < 1

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 90% interval of q, or None when the window has too few points for it to mean that."""
        return (self.q_low, self.q_high) if self.window >= MIN_INTERVAL_POINTS else None


@dataclass(frozen=True)
class Diagnosis:
    label: str
    reason: str
    fit: Fit | None
    period: int | None = None
    cycling_items: tuple[str, ...] = ()
    cycling_requirements: tuple[str, ...] = field(default=())

    def as_json(self) -> dict[str, object]:
        fit = None if self.label == "insufficient" else self.fit  # a line through two passes judges nothing: no q shown
        return {
            "diagnosis": self.label,
            "reason": self.reason,
            "q": None if fit is None else round(fit.q, 4),
            "q_interval": None if fit is None or fit.interval is None else [round(fit.q_low, 4), round(fit.q_high, 4)],
            "window": None if fit is None else fit.window,
            "passes_left": None if fit is None else fit.passes_left,
            "period": self.period,
            "cycling_requirements": list(self.cycling_requirements),
        }


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def fit(series: Sequence[float], window: int = WINDOW) -> Fit | None:
    recent = list(series[-window:])
    n = len(recent)
    if n < 2:
        return None
    ys = [math.log(max(value, 0.0) + OFFSET) for value in recent]
    slopes = sorted((ys[j] - ys[i]) / (j - i) for i in range(n) for j in range(i + 1, n))
    slope = _median(slopes)
    count = len(slopes)
    spread = Z90 * math.sqrt(n * (n - 1) * (2 * n + 5) / 18)
    low_rank = max(0, int(math.floor((count - spread) / 2)))
    high_rank = min(count - 1, int(math.ceil((count + spread) / 2)))
    low, high = slopes[low_rank], slopes[high_rank]
    passes_left = None
    last = recent[-1]
    if last <= 0:
        passes_left = 0
    elif slope < 0:
        passes_left = max(1, math.ceil(math.log(last + OFFSET) / -slope))
    return Fit(math.exp(slope), math.exp(low), math.exp(high), n, passes_left)


def _drop(before: Sequence[float], after: Sequence[float]) -> bool:
    """A meaningful fall in level: medians differ by more than two noise steps and a fifth of the earlier level."""
    high, low = _median(list(before)), _median(list(after))
    return high - low > max(2 * NOISE, 0.2 * high)


def _period(values: list[float]) -> int | None:
    """The shortest period >= 2 at which most points repeat the value p passes before, while lag 1 does not."""
    amplitude = max(values) - min(values)
    if amplitude < 3 * NOISE:
        return None
    tolerance = max(2 * NOISE, 0.2 * amplitude)  # two noisy points may differ by two noise steps

    def agreement(lag: int) -> float:
        pairs = [(values[t], values[t - lag]) for t in range(lag, len(values))]
        return sum(abs(a - b) <= tolerance for a, b in pairs) / len(pairs) if pairs else 0.0

    for lag in range(2, len(values) // 2 + 1):
        if agreement(lag) >= 0.75 and agreement(1) < 0.5:
            return lag
    return None


def _item_period(items_per_pass: Sequence[Sequence[str]]) -> int | None:
    """The shortest period >= 2 at which the set of open items repeats, while neighbouring passes differ."""
    sets = [frozenset(items) for items in items_per_pass]
    if len(sets) < 4:
        return None

    def agreement(lag: int) -> float:
        pairs = [(sets[t], sets[t - lag]) for t in range(lag, len(sets))]
        return sum(a == b for a, b in pairs) / len(pairs)

    for lag in range(2, len(sets) // 2 + 1):
        if agreement(lag) >= 0.75 and agreement(1) < 0.5:
            return lag
    return None


def _cycling(items_per_pass: Sequence[Sequence[str]]) -> tuple[str, ...]:
    if not items_per_pass:
        return ()
    sets = [set(items) for items in items_per_pass]
    always = set.intersection(*sets) if sets else set()
    sometimes = set.union(*sets) if sets else set()
    return tuple(sorted(sometimes - always))


def diagnose(
    series: Sequence[float],
    items_per_pass: Sequence[Sequence[str]] = (),
    requirements_of: dict[str, Sequence[str]] | None = None,
) -> Diagnosis:
    values = [float(v) for v in series]
    n = len(values)
    if n < 3:
        return Diagnosis("insufficient", f"{n} pass(es); a fit needs at least 3", fit(values))
    result = fit(values)
    assert result is not None
    last = values[-1]
    if last <= 0:
        return Diagnosis("converged", "the latest pass found nothing", result)
    recent = values[-WINDOW:]
    if result.q_low > 1.0 and recent[-1] > recent[0]:
        return Diagnosis("diverging", f"the residual grew from {recent[0]:g} to {recent[-1]:g} (q > 1)", result)
    window_items = list(items_per_pass[-len(recent):]) if items_per_pass else []
    period = _period(recent) or _item_period(window_items)
    third = max(1, len(recent) // 3)
    if period is not None and not _drop(recent[:third], recent[-third:]):
        items = _cycling(window_items)
        reqs = sorted({r for item in items for r in (requirements_of or {}).get(item, [item.split(".")[0]])})
        return Diagnosis("oscillating", f"the residual repeats with period {period} and does not decrease: no fixed point",
                         result, period, items, tuple(reqs))
    if n > STALL_WINDOW:
        stall, earlier = values[-STALL_WINDOW:], values[:-STALL_WINDOW]
        if _drop(earlier, stall) and not _drop(stall[:2], stall[-2:]):
            return Diagnosis("stalled", f"it fell from {max(earlier):g} but the last {len(stall)} passes made no progress "
                             f"(still {last:g}): a wrong basin", result)
    whole = max(1, n // 3)
    decreased = _drop(values[:whole], values[-whole:])
    if not decreased:
        return Diagnosis("flat", f"no meaningful decrease from {values[0]:g} in {n} passes (q about 1)", result)
    if result.q_high < 1.0:
        return Diagnosis("converging", f"q = {result.q:.2f} per pass", result)
    return Diagnosis("stalled", "it decreased, but there is no clear contraction over the recent window", result)
