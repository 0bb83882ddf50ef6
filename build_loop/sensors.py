"""Sensors: each result is keyed by a stable identity, so the ratchet compares tests by who they are, not
by how many there are (a deleted passing test reads as red).

A conformance sensor runs canon's tests through shared.measurement.conformance and yields one identity per expected
test ('name::node id') plus one for the run, judged by the per-test report and its canaries, never by the
exit code. A pytest-kind sensor (build's own tests, from banach.toml) is run with --junitxml the same way
but without the canary; a command sensor yields one identity from its exit code. A sensor may print
'SCORE: n' as a tie-break. A timed-out sensor fails with a constant fingerprint.
"""
from __future__ import annotations

import hashlib
import re
import sys
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from shared.export import remove_tree
from shared.measurement import conformance, polyglot
from shared.measurement.excerpt import excerpt
from shared.process import Limits, Request, run
from shared.untrusted import read_untrusted

SCORE = re.compile(r"^SCORE:\s*(-?\d+(?:\.\d+)?)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Sensor:
    name: str
    argv: tuple[str, ...]
    kind: str  # "command" | "pytest" | "conformance"
    timeout: float
    nodes: tuple[str, ...] = ()  # conformance: canon's node ids
    canon_dir: Path | None = None  # conformance: build's export of canon
    python: str = sys.executable  # conformance: the project's interpreter (shared/environment.py)
    roots: tuple[str, ...] = ("",)  # conformance: the code's import roots
    network: str = "none"  # "none": cut off, only its own loopback; "open": the machine's (canon or the sensor says so)
    node_modules: Path | None = None  # conformance in node or go: the project's packages (shared/environment/)
    go_modules: Path | None = None


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


JUNIT_LIMIT = 16_000_000  # bytes of a pytest-kind sensor's junit XML; past it the file is not read


def _junit_results(path: Path, name: str) -> dict[str, bool]:
    data = read_untrusted(path, JUNIT_LIMIT)  # a FIFO, a device or a link is refused
    try:
        root = ET.fromstring(data) if data is not None else None
    except ET.ParseError:
        root = None
    if root is None:
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


class Wrap(Protocol):
    """Confines a sensor's argv: it writes only `writable`, reads `read` too (in a view, where it reads nothing else
    but the tree, its toolchains and the environment of `python`), and reads none of `hidden`."""

    def __call__(self, argv: tuple[str, ...], *, python: str, writable: Path, read: tuple[Path, ...],
                 hidden: list[Path], network: str) -> tuple[str, ...]: ...


def read_sensors(sensors: list[Sensor], cwd: Path, env: dict[str, str], scratch: Path,
                 wrap: Wrap | None = None, limits: Limits | None = None, cancel: threading.Event | None = None) -> Reading:
    """Each sensor runs in a folder of its own under scratch, the only place it may write (under wrap). cancel: when
    set, the running sensor is stopped and no other starts (each then reads as red)."""
    results: dict[str, bool] = {}
    excerpts: dict[str, str] = {}
    timed_out: list[str] = []
    score = 0.0
    fingerprints: list[str] = []
    scratch.mkdir(parents=True, exist_ok=True)
    for sensor in sensors:
        if cancel is not None and cancel.is_set():
            results[sensor.name] = False
            continue
        folder = scratch / hashlib.sha256(sensor.name.encode()).hexdigest()[:12]
        measured: conformance.Run | polyglot.AnyRun | None = None
        requests: list[Request] = []
        if sensor.kind == "conformance" and sensor.canon_dir is not None and polyglot.other_languages(sensor.nodes):
            measured = polyglot.prepare(sensor.canon_dir, cwd, sensor.nodes, folder, python=sensor.python,
                                        roots=sensor.roots, node_modules=sensor.node_modules, go_modules=sensor.go_modules)
            hidden = [sensor.canon_dir]
            per_run = partial(_per_run, wrap, sensor.python, hidden, sensor.network) if wrap else None
            requests = measured.requests(env=env, timeout=sensor.timeout, limits=limits, confine=per_run)
        elif sensor.kind == "conformance" and sensor.canon_dir is not None:
            measured = conformance.prepare(sensor.canon_dir, cwd, sensor.nodes, folder, python=sensor.python,
                                           roots=sensor.roots)
            confine = partial(wrap, python=sensor.python, writable=measured.scratch, read=(measured.canon,),
                              hidden=[sensor.canon_dir], network=sensor.network) if wrap else None
            requests = [measured.request(env=env, timeout=sensor.timeout, limits=limits, wrap=confine)]
        else:
            remove_tree(folder)
            (folder / "tmp").mkdir(parents=True)
            own = folder / "tmp"
            argv = (*sensor.argv, f"--junitxml={own / 'junit.xml'}", "-o", "junit_family=xunit1") \
                if sensor.kind == "pytest" else sensor.argv
            read = tuple(path for path in (sensor.canon_dir, sensor.go_modules) if path is not None)
            confined = wrap(argv, python=sensor.python, writable=own, read=read, hidden=[], network=sensor.network) \
                if wrap else argv
            requests = [Request(confined, cwd=cwd, env={**env, "TMPDIR": str(own), "HOME": str(own)},
                                timeout=sensor.timeout, grace=0.5, limits=limits)]
        try:
            outcomes = [run(request, cancel=cancel) for request in requests]
            outcome = polyglot.merged(outcomes)
            if sensor.kind == "pytest":
                results.update(_junit_results(folder / "tmp" / "junit.xml", sensor.name))
        finally:
            if measured is not None:
                measured.close()
            remove_tree(folder)
        output = outcome.stdout + outcome.stderr
        results[sensor.name] = outcome.ok
        if measured is not None:
            verdict = measured.judge(outcome) if isinstance(measured, conformance.Run) else measured.judge(outcomes)
            output = verdict.output  # without the canaries: this reaches the agent's next prompt
            results[sensor.name] = verdict.passed and not outcome.timed_out
            results.update({f"{sensor.name}::{node}": ok for node, ok in verdict.results.items()})
            if not verdict.passed:
                output = output + "\n" + verdict.summary()
        if measured is None:  # a conformance run's output is the code's to write: it decides nothing, not even a tie
            for match in SCORE.finditer(output):
                score += float(match.group(1))
        if not results[sensor.name]:
            capped = f"\n(capped: {outcome.capped})" if outcome.capped else ""
            excerpts[sensor.name] = excerpt(output, lines=40) + capped
            if outcome.timed_out:
                timed_out.append(sensor.name)
                fingerprints.append(f"{sensor.name}:timeout")
    failing = sorted(identity for identity, green in results.items() if not green)
    return Reading(results, score, failing_digest(failing, fingerprints), excerpts, tuple(timed_out))


def _per_run(wrap: Wrap, python: str, hidden: list[Path], network: str, argv: tuple[str, ...], writable: Path,
             readable: tuple[Path, ...]) -> tuple[str, ...]:
    """One file's run of a conformance sensor in another language, confined like the pytest one."""
    return wrap(argv, python=python, writable=writable, read=readable, hidden=hidden, network=network)


def failing_digest(failing: list[str], timeouts: list[str]) -> str:
    """A reading's fingerprint: its failing checks and which sensors timed out ("" when nothing fails)."""
    return hashlib.sha256("\n".join(sorted([*timeouts, *failing])).encode()).hexdigest()[:16] if failing else ""


def regressions(before: Reading, after: Reading) -> list[str]:
    """The ratchet: every identity that was green must still be green (missing counts as red)."""
    return sorted(identity for identity in before.green if not after.results.get(identity, False))


def better(before: Reading, after: Reading) -> bool:
    return len(after.failing) < len(before.failing) or (
        len(after.failing) == len(before.failing) and after.score > before.score)


def refusal(before: Reading, after: Reading, *, unseen: bool = False) -> str:
    """Why a change measured `after` may not be kept over `before` (the ratchet, then progress), or "" to keep it.
    unseen: the item's evidence includes held-back tests, which only plan runs; build cannot see their progress, so
    once every visible check passes, a change that breaks nothing is kept and plan's next pass judges it. While a
    visible check still fails, a keep is earned by visible progress like any other."""
    broke = regressions(before, after)
    if broke:
        return f"the ratchet: {len(broke)} check(s) that were green went red ({', '.join(broke[:5])})"
    if better(before, after) or (unseen and not after.failing):
        return ""
    if after.fingerprint == before.fingerprint:
        return f"no progress: the same {len(after.failing)} check(s) still fail"
    return f"no progress: {len(after.failing)} failing after, {len(before.failing)} before"
