"""Sensors: each result is keyed by a stable identity, so the ratchet compares tests by who they are, not
by how many there are (a deleted passing test reads as red).

A conformance sensor runs canon's tests through shared.conformance and yields one identity per expected
test ('name::node id') plus one for the run, judged by the per-test report and its canary, never by the
exit code. A pytest-kind sensor (build's own tests, from banach.toml) is run with --junitxml the same way
but without the canary; a command sensor yields one identity from its exit code. A sensor may print
'SCORE: n' as a tie-break. A timed-out sensor fails with a constant fingerprint.
"""
from __future__ import annotations

import hashlib
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared import conformance
from shared.process import Limits, Request, run

SCORE = re.compile(r"^SCORE:\s*(-?\d+(?:\.\d+)?)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Sensor:
    name: str
    argv: tuple[str, ...]
    kind: str  # "command" | "pytest" | "conformance"
    timeout: float
    nodes: tuple[str, ...] = ()  # conformance: canon's node ids
    canon_dir: Path | None = None  # conformance: build's export of canon


@dataclass(frozen=True)
class Reading:
    """The sensors' verdict at one state of the work tree."""

    results: dict[str, bool]  # identity -> green
    score: float
    fingerprint: str  # of the failing set
    excerpts: dict[str, str]  # sensor name -> output tail, for failing sensors
    timed_out: tuple[str, ...] = ()

    @property
    def failing(self) -> list[str]:
        return sorted(identity for identity, green in self.results.items() if not green)

    @property
    def green(self) -> set[str]:
        return {identity for identity, green in self.results.items() if green}

    def as_json(self) -> dict[str, object]:
        return {"results": self.results, "score": self.score, "fingerprint": self.fingerprint,
                "excerpts": self.excerpts, "timed_out": list(self.timed_out)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Reading:
        return cls(dict(data["results"]), float(data["score"]), str(data["fingerprint"]), dict(data["excerpts"]),
                   tuple(data.get("timed_out", ())))


def _junit_results(path: Path, name: str) -> dict[str, bool]:
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return {}
    results: dict[str, bool] = {}
    for case in root.iter("testcase"):
        classname = case.get("classname", "")
        node = f"{classname.replace('.', '/')}.py::{case.get('name', '')}" if classname else case.get("name", "")
        failed = any(child.tag in ("failure", "error") for child in case)
        skipped = any(child.tag == "skipped" for child in case)
        if not skipped:
            results[f"{name}::{node}"] = not failed
    return results


def read_sensors(sensors: list[Sensor], cwd: Path, env: dict[str, str], scratch: Path,
                 wrap: object = None, limits: Limits | None = None) -> Reading:
    results: dict[str, bool] = {}
    excerpts: dict[str, str] = {}
    timed_out: list[str] = []
    score = 0.0
    fingerprints: list[str] = []
    scratch.mkdir(parents=True, exist_ok=True)
    for sensor in sensors:
        argv = sensor.argv
        stem = scratch / hashlib.sha256(sensor.name.encode()).hexdigest()[:12]
        junit = stem.with_suffix(".xml")
        measured: conformance.Run | None = None
        if sensor.kind == "pytest":
            junit.unlink(missing_ok=True)
            argv = (*argv, f"--junitxml={junit}", "-o", "junit_family=xunit1")
        elif sensor.kind == "conformance" and sensor.canon_dir is not None:
            measured = conformance.prepare(sensor.canon_dir, cwd, sensor.nodes, stem.with_suffix(".jsonl"))
            argv = measured.argv
        if callable(wrap):
            argv = wrap(argv)
        run_env = conformance.environment(env) if measured else env
        try:
            outcome = run(Request(argv, cwd=cwd, env=run_env, timeout=sensor.timeout, grace=0.5, limits=limits))
        finally:
            if measured is not None:
                measured.close()
        output = outcome.stdout + outcome.stderr
        results[sensor.name] = outcome.ok
        if sensor.kind == "pytest":
            results.update(_junit_results(junit, sensor.name))
        elif measured is not None:
            verdict = measured.judge()
            results[sensor.name] = verdict.passed and not outcome.timed_out
            results.update({f"{sensor.name}::{node}": ok for node, ok in verdict.results.items()})
            if not verdict.passed:
                output = output + "\n" + verdict.summary()
        if measured is None:  # a conformance run's output is the code's to write: it decides nothing, not even a tie
            for match in SCORE.finditer(output):
                score += float(match.group(1))
        if not results[sensor.name]:
            capped = f"\n(capped: {outcome.capped})" if outcome.capped else ""
            excerpts[sensor.name] = "\n".join(output.strip().splitlines()[-40:]) + capped
            if outcome.timed_out:
                timed_out.append(sensor.name)
                fingerprints.append(f"{sensor.name}:timeout")
    failing = sorted(identity for identity, green in results.items() if not green)
    fingerprints += failing
    digest = hashlib.sha256("\n".join(sorted(fingerprints)).encode()).hexdigest()[:16] if failing else ""
    return Reading(results, score, digest, excerpts, tuple(timed_out))


def regressions(before: Reading, after: Reading) -> list[str]:
    """The ratchet: every identity that was green must still be green (missing counts as red)."""
    return sorted(identity for identity in before.green if not after.results.get(identity, False))
