"""A sealed run: a requirement's cases (shared/measurement/cases.py) given to the code as inputs only, and graded here.

    run = prepare(files, code_dir, folder, python=..., roots=...)
    outcomes = [process.run(request) for request in run.requests(env=..., limits=..., wrap=...)]
    verdict = run.judge(outcomes)

The call cases go to one runner in the code's process (shared/measurement/callrun.py) on its standard input, each
under a fresh random id and in a shuffled order, with no expected value; its report channel brings back what the code
claims it returned. Each run case is a process of its own, its standard output and exit code read by this process.
The expected values stay in this process, and the comparison (shared/measurement/checkers/) runs here, on JSON data.

A run measures nothing (void: every case fails) when the runner's report does not end with its finished line, has a
line that is not one it writes, names an id it was not given, or answers one twice.
"""
from __future__ import annotations

import json
import random
import secrets
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from shared.export import remove_tree
from shared.measurement import gotest, nodetest
from shared.measurement.cases import CallCase, Case, CasesFile, RunCase
from shared.measurement.checkers import judge as check
from shared.process import Limits, Outcome, Request

RUNNER = Path(__file__).resolve().with_name("callrun.py")
_rng = random.SystemRandom()


@dataclass(frozen=True)
class SealedVerdict:
    results: dict[str, bool]  # case label ("sealed/slug.json#3") -> passed
    void: str = ""
    why: dict[str, str] = field(default_factory=dict)  # case label -> what differed: for the person who wrote them

    @property
    def passed(self) -> bool:
        return not self.void and bool(self.results) and all(self.results.values())

    @property
    def failing(self) -> list[str]:
        return sorted(label for label, ok in self.results.items() if not ok)

    def reveal(self) -> str:
        """Every failing case and why, for the person who wrote the cases (spec's dry run): never for the agent."""
        lines = [f"measurement void: {self.void}"] if self.void else []
        return "\n".join(lines + [f"{label}: {self.why.get(label, 'failed')}" for label in self.failing[:40]])


@dataclass(frozen=True)
class SealedRun:
    code_dir: Path
    folder: Path  # the run's own: its HOME and TMPDIR (folder/tmp)
    python: str
    roots: tuple[str, ...]
    calls: dict[str, tuple[str, CallCase, float, str]]  # id -> (label, case, time limit, callable)
    commands: dict[str, tuple[str, RunCase, float]]  # id -> (label, case, time limit)
    run_dir: Path | None = None  # where run cases run: the code, or its copy with the project's node_modules linked in
    go_modules: Path | None = None  # the project's Go modules, for a run case whose program is go

    @property
    def readable(self) -> tuple[Path, ...]:
        """What run cases read besides the code and their toolchains: the copy with node_modules, the Go modules."""
        tree = (self.run_dir, self.run_dir / "node_modules") if self.run_dir is not None else ()
        return tuple(path.resolve() for path in (*tree, *((self.go_modules,) if self.go_modules else ())))

    @property
    def scratch(self) -> Path:
        return self.folder / "tmp"

    def _own(self, env: Mapping[str, str]) -> dict[str, str]:
        return {**env, "HOME": str(self.scratch), "TMPDIR": str(self.scratch), "PYTHONDONTWRITEBYTECODE": "1"}

    def requests(self, *, env: Mapping[str, str], limits: Limits | None,
                 wrap: Callable[[tuple[str, ...]], tuple[str, ...]] | None = None) -> list[Request]:
        """The runner's request (when there are call cases), then one per run case, in their shuffled order."""
        confine = wrap or (lambda argv: argv)
        found = []
        if self.calls:
            order = list(self.calls)
            _rng.shuffle(order)
            stdin = json.dumps({"cases": [{"id": key, "call": self.calls[key][3], "args": self.calls[key][1].args,
                                           "kwargs": self.calls[key][1].kwargs, "limit": self.calls[key][2]}
                                          for key in order]})
            code = [flag for root in self.roots for flag in ("--code", str(self.code_dir / root))]
            argv = (self.python, "-I", "-S", "-B", str(RUNNER), *code)
            budget = sum(self.calls[key][2] for key in order) + 30
            found.append(Request(confine(argv), cwd=self.code_dir, env=self._own(env), stdin=stdin, timeout=budget,
                                 grace=0.5, limits=limits, report=True))
        toolchains = gotest.environment(self.scratch, self.go_modules)  # `go run` offline, with the project's modules
        for key in self.commands:
            _, case, limit = self.commands[key]
            argv = (self.python, *case.run[1:]) if case.run[0] == "python" else tuple(case.run)
            found.append(Request(confine(argv), cwd=self.run_dir or self.code_dir, env={**self._own(env), **toolchains},
                                 stdin=case.stdin, timeout=limit, grace=0.5, limits=limits))
        return found

    def judge(self, outcomes: list[Outcome]) -> SealedVerdict:
        results: dict[str, bool] = {}
        why: dict[str, str] = {}
        void = ""
        if self.calls:
            claims, void = _claims(outcomes[0], set(self.calls))
            for key, (label, case, _limit, _call) in self.calls.items():
                said = "no answer" if void or key not in claims else \
                    ("ran out of its time limit" if claims[key].get("timed_out") else check(case, claims[key]))
                results[label], why[label] = not said, said
            outcomes = outcomes[1:]
        for (label, command, _limit), outcome in zip(self.commands.values(), outcomes, strict=True):
            claimed = {"stdout": outcome.stdout, "exit": outcome.returncode, "timed_out": outcome.timed_out}
            said = check(command, claimed)
            results[label], why[label] = not said, said
        if void:
            results = dict.fromkeys(results, False)
        return SealedVerdict(results, void, {label: text for label, text in why.items() if text})

    def close(self) -> None:
        remove_tree(self.folder)


def _claims(outcome: Outcome, given: set[str]) -> tuple[dict[str, dict[str, object]], str]:
    """What the runner's report claims for each id, or why the report cannot be believed."""
    claims: dict[str, dict[str, object]] = {}
    if outcome.report is None:
        return {}, "the report overfilled its channel, or there was none"
    finished = False
    for number, line in enumerate(outcome.report.splitlines(), 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            return {}, f"line {number} of the report is not JSON"
        if finished or not isinstance(record, dict):
            return {}, f"line {number} of the report is not one the runner writes"
        if set(record) == {"finished"}:
            finished = True
            continue
        key = record.pop("id", None)
        if key not in given or key in claims or len(record) != 1 or next(iter(record)) not in (
                "returns", "raises", "unserializable", "timed_out"):
            return {}, f"line {number} of the report answers a case it was not given, or one twice"
        claims[str(key)] = record
    if not finished:
        return {}, "the runner ended before it finished (an early exit, a crash, a kill or a time-out)"
    return claims, ""


def prepare(files: Mapping[str, CasesFile], code_dir: Path, folder: Path, *, python: str = sys.executable,
            roots: tuple[str, ...] = ("",), node_modules: Path | None = None, go_modules: Path | None = None) -> SealedRun:
    """A run of every case of these files (canon path -> cases), in folder (made new: folder/tmp is the run's only
    writable place), each case under a fresh id. node_modules, go_modules: the project's packages (shared/environment/),
    which a run case whose program is node or go finds as the project's own commands do."""
    remove_tree(folder)
    (folder / "tmp").mkdir(parents=True)
    calls: dict[str, tuple[str, CallCase, float, str]] = {}
    commands: dict[str, tuple[str, RunCase, float]] = {}
    for path, cases in files.items():
        for index, one in enumerate(cases.cases):
            label, key = f"{path}#{index + 1}", secrets.token_hex(6)
            if isinstance(one, CallCase):
                calls[key] = (label, one, cases.limit(one), cases.callable_of(one))
            else:
                commands[key] = (label, one, cases.limit(one))
    order = list(commands.items())
    _rng.shuffle(order)
    tree = nodetest.code_with_packages(code_dir, folder / "tree", node_modules) if node_modules and commands else None
    return SealedRun(code_dir, folder, python, roots, calls, dict(order), tree, go_modules)


def labels(files: Mapping[str, CasesFile]) -> list[str]:
    """Every case's label, in the files' order."""
    return [f"{path}#{index + 1}" for path, cases in files.items() for index, _ in enumerate(cases.cases)]


__all__ = ["Case", "SealedRun", "SealedVerdict", "labels", "prepare"]
