"""The monitor's labels on generated series of each shape, with noise, over many seeds."""
from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.errors import BanachError
from shared.monitor.fit import LABELS, MIN_INTERVAL_POINTS, diagnose, fit
from shared.monitor.series import read_series_file
from tests.helpers.workspaces import cli

SEEDS = range(12)


def noisy(values: list[float], rng: random.Random, amount: int = 1) -> list[int]:
    return [max(0, round(v + rng.randint(-amount, amount))) for v in values]


def converging(rng: random.Random) -> list[int]:
    start = rng.randint(30, 60)
    series = noisy([start * 0.7 ** t for t in range(7)], rng)
    return [max(v, 3) for v in series]


def diverging(rng: random.Random) -> list[int]:
    return noisy([4 * 1.3 ** t for t in range(8)], rng)


def oscillating(rng: random.Random) -> list[int]:
    period = rng.choice([2, 3])
    pattern = [9, 3] if period == 2 else [10, 6, 2]
    return noisy([pattern[t % period] for t in range(10)], rng, amount=rng.choice([0, 1]) if period == 3 else 1)


def stalled(rng: random.Random) -> list[int]:
    return noisy([30, 20, 13, 9], rng) + noisy([6] * 6, rng)


def flat(rng: random.Random) -> list[int]:
    return noisy([8] * 9, rng)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("shape", "label"), [
    (converging, "converging"), (diverging, "diverging"), (oscillating, "oscillating"), (stalled, "stalled"), (flat, "flat"),
])
def test_each_shape_gets_its_label(shape, label: str, seed: int) -> None:  # type: ignore[no-untyped-def]
    series = shape(random.Random(seed))
    assert diagnose(series).label == label, series


def test_insufficient_and_converged() -> None:
    assert diagnose([5, 4]).label == "insufficient"
    assert diagnose([5, 4]).as_json()["q"] is None  # status and the dashboard's q tile say "-" until there is a fit
    assert diagnose([5, 3, 2, 0]).label == "converged"


def test_fit_gives_q_an_interval_and_passes_left() -> None:
    result = fit([32, 16, 8, 4, 2])
    assert result is not None
    assert 0.45 < result.q < 0.6 and result.q_low <= result.q <= result.q_high < 1
    assert result.passes_left == 2


def test_q_has_an_interval_only_from_as_many_passes_as_make_it_a_90_percent_one() -> None:
    def coverage(n: int) -> float:
        """How often the interval fit() reports holds q = 1 for a flat series: exactly, over every order of n
        distinct residuals (without a trend each order is as likely as any other)."""
        fits = [fit([10 + 3 * v for v in order]) for order in itertools.permutations(range(n))]
        return sum(f is not None and f.q_low < 1 < f.q_high for f in fits) / len(fits)

    assert coverage(MIN_INTERVAL_POINTS - 1) < 0.9 <= coverage(MIN_INTERVAL_POINTS)
    for series in ([5, 3], [5, 3, 2]):
        result = fit(series)
        assert result is not None and result.window == len(series) and result.interval is None
    result = fit([5, 3, 2, 1])
    assert result is not None and result.interval == (result.q_low, result.q_high)


def test_one_outlier_does_not_swing_q() -> None:
    clean = fit([32, 16, 8, 4, 2, 1])
    spiked = fit([32, 16, 80, 4, 2, 1])
    assert clean is not None and spiked is not None and abs(clean.q - spiked.q) < 0.1


def test_oscillation_names_the_requirements_that_come_and_go() -> None:
    items = [["A-1.x", "B-1.y"], ["C-1.z"]] * 4
    diagnosis = diagnose([2, 1] * 4 + [2, 1], items * 1 + items[:2], {"A-1.x": ["A-1"], "B-1.y": ["B-1"], "C-1.z": ["C-1"]})
    assert diagnosis.label in ("oscillating", "flat")
    wide = diagnose([9, 3] * 5, [["A-1.x", "B-1.y"], ["C-1.z"]] * 5, {"A-1.x": ["A-1"], "B-1.y": ["B-1"], "C-1.z": ["C-1"]})
    assert wide.label == "oscillating" and wide.period == 2
    assert wide.cycling_requirements == ("A-1", "B-1", "C-1")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=60))
def test_any_series_gets_one_of_the_labels(series: list[int]) -> None:
    diagnosis = diagnose(series)
    assert diagnosis.label in LABELS
    json.dumps(diagnosis.as_json())


def test_monitor_command_reads_a_series_file(tmp_path: Path) -> None:
    path = tmp_path / "series.json"
    path.write_text("[40, 28, 20, 14, 10, 7, 5]")
    result = cli("banach", "monitor", "--series", str(path), "--json")
    out = json.loads(result.stdout)
    assert out["diagnosis"] == "converging" and 0.6 < out["q"] < 0.8
    assert out["window"] == 7 and out["passes_left"] > 0 and len(out["q_interval"]) == 2
    lines = tmp_path / "series.txt"
    lines.write_text("# one a line\n9\n3\n9\n3\n9\n3\n9\n3\n")
    assert json.loads(cli("banach", "monitor", "--series", str(lines), "--json").stdout)["diagnosis"] == "oscillating"


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty"), ("[1, 2, \"x\"]", "element 2"), ("[1, 2", "not a JSON array"), ("3\nfour\n", ":2: 'four' is not a number"),
    ("[-1]", "element 0"), ("nan\n", "finite"), ("{\"a\": 1}", "not a JSON array"),
])
def test_bad_series_files_say_where(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "s.txt"
    path.write_text(text)
    with pytest.raises(BanachError, match=message):
        read_series_file(path)
