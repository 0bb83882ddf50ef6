"""Flaky tests: a test whose outcome flips on the same tree is neither a regression nor progress, but only when it
flips without the turn's change too.

After a turn, every check whose outcome differs from the checkpoint's (green to red, or red to green) is measured
again: its sensors run whole, build.flake_reruns times, exactly as they ran (the same argv, environment and order:
code under test cannot tell a rerun from a run, so it cannot answer reruns right and runs wrong). A check that reads
both ways on the turn's tree is then measured on the checkpoint's tree as many times: if it flips there too, it is
flaky, taken out of both readings for this decision (the ratchet and progress judge the rest), recorded with the turn
(`iteration.ended`, key `flaky`), named in `banach status` and the plot, and listed by plan as a canon problem to
fix. If it is steady at the checkpoint, the turn made it unreliable: it reads red after (a regression when it was
green, no progress when it was red).
"""
from __future__ import annotations

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
    """The sensors that measure these checks, whole: a rerun is the same run."""
    return [sensor for sensor in sensors
            if any(identity == sensor.name or identity.startswith(sensor.name + "::") for identity in identities)]


def without(reading: Reading, identities: set[str]) -> Reading:
    results = {identity: green for identity, green in reading.results.items() if identity not in identities}
    failing = sorted(identity for identity, green in results.items() if not green)
    timeouts = [f"{name}:timeout" for name in reading.timed_out]
    return Reading(results, reading.score, failing_digest(failing, timeouts), reading.excerpts, reading.timed_out)


def _readings(read: Callable[[list[Sensor]], Reading], sensors: list[Sensor], identities: list[str], start: dict[str, bool],
              reruns: int) -> dict[str, list[bool]]:
    """What each check read: `start`, then each of `reruns` more readings of its sensors."""
    seen = {identity: [start[identity]] for identity in identities}
    chosen = again(sensors, identities)
    for _ in range(reruns):
        reading = read(chosen)
        for identity, outcomes in seen.items():
            if identity in reading.results:
                outcomes.append(reading.results[identity])
    return seen


def settle(read: Callable[[list[Sensor]], Reading], read_checkpoint: Callable[[list[Sensor]], Reading],
           sensors: list[Sensor], before: Reading, after: Reading, reruns: int) -> Settled:
    """The flipped checks measured `reruns` more times on the tree `after` read (read), and those that read both ways
    there measured as often on the checkpoint's tree (read_checkpoint): flaky if they flip there too, red after if
    not. A conformance run's own identity (the sensor's name) follows its tests."""
    changed = flipped(before, after)
    if not changed or reruns <= 0:
        return Settled(before, after)
    runs_of_tests = {sensor.name for sensor in sensors if sensor.kind == "conformance"}  # judged by their tests
    measured = [identity for identity in changed if identity not in runs_of_tests]
    on_turn = _readings(read, sensors, measured, after.results, reruns)
    unsteady = [identity for identity, outcomes in on_turn.items() if len(set(outcomes)) > 1]
    if not unsteady:
        return Settled(before, after)
    at_checkpoint = _readings(read_checkpoint, sensors, unsteady, before.results, reruns)
    flaky = {identity: on_turn[identity] + at_checkpoint[identity] for identity in unsteady
             if len(set(at_checkpoint[identity])) > 1}
    made_unsteady = {identity for identity in unsteady if identity not in flaky}  # steady before the turn
    if made_unsteady:
        after = reddened(after, made_unsteady | _runs_of(made_unsteady, after))
    taken = set(flaky) | _runs_of(set(flaky), after)
    if not taken:
        return Settled(before, after)
    return Settled(without(before, taken), without(after, taken), flaky)


def _runs_of(identities: set[str], reading: Reading) -> set[str]:
    """The conformance runs (a sensor's own identity) holding these tests: a run follows its tests."""
    return {identity.split("::", 1)[0] for identity in identities if "::" in identity} & set(reading.results)


def reddened(reading: Reading, identities: set[str]) -> Reading:
    """The reading with these checks red."""
    results = {**reading.results, **dict.fromkeys(identities, False)}
    failing = sorted(identity for identity, green in results.items() if not green)
    return Reading(results, reading.score, failing_digest(failing, [f"{name}:timeout" for name in reading.timed_out]),
                   reading.excerpts, reading.timed_out)
