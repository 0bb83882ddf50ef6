"""Flaky tests: a test whose outcome flips on the same tree is neither a regression nor progress.

After a turn, every check whose outcome differs from the checkpoint's (green to red, or red to green) is measured
again on the same tree, build.flake_reruns times, before the governor decides: a conformance sensor reruns exactly
those tests, any other sensor runs whole. A check that reads both ways on the one tree is flaky. It is taken out of
both readings for this decision (the ratchet and progress judge the rest), recorded with the turn (`iteration.ended`,
key `flaky`), named in `banach status` and the plot, and listed by plan as a canon problem to fix.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from build_loop.sensors import Reading, Sensor, failing_digest


@dataclass(frozen=True)
class Settled:
    before: Reading  # the readings with the flaky checks taken out
    after: Reading
    flaky: dict[str, list[bool]] = field(default_factory=dict)  # check -> what it read: after, then each rerun


def flipped(before: Reading, after: Reading) -> list[str]:
    """Checks both readings measured, with different outcomes."""
    return sorted(identity for identity, green in after.results.items()
                  if identity in before.results and before.results[identity] != green)


def again(sensors: list[Sensor], identities: list[str]) -> list[Sensor]:
    """The sensors that measure these checks, a conformance sensor narrowed to exactly the flipped tests."""
    chosen = []
    for sensor in sensors:
        mine = [identity for identity in identities if identity == sensor.name or identity.startswith(sensor.name + "::")]
        if not mine:
            continue
        nodes = tuple(identity.split("::", 1)[1] for identity in mine if "::" in identity)
        if sensor.kind == "conformance" and nodes:
            chosen.append(dataclasses.replace(sensor, nodes=nodes))
        else:
            chosen.append(sensor)
    return chosen


def without(reading: Reading, identities: set[str]) -> Reading:
    results = {identity: green for identity, green in reading.results.items() if identity not in identities}
    failing = sorted(identity for identity, green in results.items() if not green)
    timeouts = [f"{name}:timeout" for name in reading.timed_out]
    return Reading(results, reading.score, failing_digest(failing, timeouts), reading.excerpts, reading.timed_out)


def settle(read: Callable[[list[Sensor]], Reading], sensors: list[Sensor], before: Reading, after: Reading,
           reruns: int) -> Settled:
    """The flipped checks measured `reruns` more times on the tree `after` read; those that read both ways are flaky.
    A conformance run's own identity (the sensor's name) follows its tests: it is flaky when one of them is."""
    changed = flipped(before, after)
    if not changed or reruns <= 0:
        return Settled(before, after)
    runs_of_tests = {sensor.name for sensor in sensors if sensor.kind == "conformance"}  # judged by their tests
    seen: dict[str, list[bool]] = {identity: [after.results[identity]] for identity in changed
                                   if identity not in runs_of_tests}
    chosen = again(sensors, changed)
    for _ in range(reruns):
        reading = read(chosen)
        for identity, outcomes in seen.items():
            if identity in reading.results:
                outcomes.append(reading.results[identity])
    flaky = {identity: outcomes for identity, outcomes in seen.items() if len(set(outcomes)) > 1}
    runs = {identity.split("::", 1)[0] for identity in flaky if "::" in identity}
    taken = set(flaky) | (runs & set(after.results))
    if not taken:
        return Settled(before, after)
    return Settled(without(before, taken), without(after, taken), flaky)
