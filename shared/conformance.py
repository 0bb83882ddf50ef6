"""What measures a requirement's conformance tests, defined once for plan and build.

A run is judged by per-test outcomes that `shared/testrun.py` writes to a report file as each test ends,
never by the exit code: the code under test can make its own process exit 0. The tests expected to run
are read from canon's test files (trusted, in canon) without importing them; an expected test with no
passing outcome is a failing test, so an early exit fails everything that had not yet passed, and a file
that fails to import fails every test in it. Each run also carries a canary: a test with a fresh name,
placed beside canon's tests, that must fail. If the report says it passed, or never ran it while the run
went on, the code has interfered with the test runner and the whole measurement is void.
"""
from __future__ import annotations

import ast
import json
import os
import random
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path

RUNNER = Path(__file__).resolve().with_name("testrun.py")
VOID_PREFIX = "measurement void"


@dataclass(frozen=True)
class Canary:
    path: Path
    node: str  # pytest node id relative to canon's root

    def remove(self) -> None:
        folder = self.path.parent
        mode = folder.stat().st_mode
        folder.chmod(mode | 0o200)
        try:
            self.path.unlink(missing_ok=True)
        finally:
            folder.chmod(mode)


@dataclass(frozen=True)
class Judgement:
    results: dict[str, bool]  # expected node id -> passed
    void: str = ""  # why the whole measurement cannot be believed, or ""
    collect_errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        return not self.void and bool(self.results) and all(self.results.values())

    @property
    def failing(self) -> list[str]:
        return sorted(node for node, ok in self.results.items() if not ok)

    def summary(self) -> str:
        lines = [f"{VOID_PREFIX}: {self.void}"] if self.void else []
        lines += [f"did not pass: {node}" for node in self.failing[:20]]
        lines += [f"could not be collected: {node}" for node in self.collect_errors[:10]]
        return "\n".join(lines + list(self.notes))


def _base(node: str) -> str:
    """The test a reported node id belongs to: parametrized ids share their function's id."""
    return node.split("[", 1)[0]


def expected_tests(canon_dir: Path, nodes: tuple[str, ...]) -> frozenset[str]:
    """The test ids a run of these node ids must report, read from the files' syntax, never imported."""
    expected: set[str] = set()
    for node in nodes:
        if "::" in node:
            expected.add(_base(node))
            continue
        try:
            tree = ast.parse((canon_dir / node).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            expected.add(f"{node}::<the whole file>")  # never reported, so it reads as failing
            continue
        found = False
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name.startswith("test"):
                expected.add(f"{node}::{stmt.name}")
                found = True
            elif isinstance(stmt, ast.ClassDef) and stmt.name.startswith("Test"):
                for inner in stmt.body:
                    if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef) and inner.name.startswith("test"):
                        expected.add(f"{node}::{stmt.name}::{inner.name}")
                        found = True
        if not found:
            expected.add(f"{node}::<no test found>")
    return frozenset(expected)


def plant_canary(canon_dir: Path, nodes: tuple[str, ...]) -> Canary:
    """A must-fail test with a fresh name, in the folder of the first test file."""
    folder = canon_dir / Path(nodes[0].split("::", 1)[0]).parent if nodes else canon_dir / "tests"
    name, function = f"test_{secrets.token_hex(6)}.py", f"test_{secrets.token_hex(6)}"
    left, right = secrets.randbelow(10**6), 10**6 + secrets.randbelow(10**6)
    mode = folder.stat().st_mode
    folder.chmod(mode | 0o200)
    try:
        (folder / name).write_text(f"def {function}():\n    assert {left} == {right}\n", encoding="utf-8")
    finally:
        folder.chmod(mode)
    return Canary(folder / name, f"{(folder / name).relative_to(canon_dir)}::{function}")


def command(canon_dir: Path, code_dir: Path, nodes: tuple[str, ...], report: Path, canary: Canary) -> tuple[str, ...]:
    """argv of one run: our runner in isolated mode, canon's tests plus the canary at a random place."""
    targets = [str(canon_dir / node) for node in nodes]
    targets.insert(random.randrange(len(targets) + 1), str(canon_dir / canary.node))
    ini = next((canon_dir / n for n in ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg") if (canon_dir / n).is_file()),
               None)
    return (sys.executable, "-I", "-B", str(RUNNER), "--report", str(report), "--code", str(code_dir), "--",
            "-q", "-p", "no:cacheprovider", "--no-header", "--continue-on-collection-errors",
            f"--rootdir={canon_dir}", f"--confcutdir={canon_dir}",
            "-c", str(ini) if ini else os.devnull, *targets)


def environment(base: dict[str, str]) -> dict[str, str]:
    """What a conformance run adds to its sandbox's environment."""
    return {**base, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_ADDOPTS": ""}


@dataclass(frozen=True)
class Run:
    """One conformance run, ready to start: its argv, and what its report will be judged against."""

    argv: tuple[str, ...]
    report: Path
    expected: frozenset[str]
    canary: Canary

    def judge(self) -> Judgement:
        return judge(self.report, self.expected, self.canary)

    def close(self) -> None:
        self.canary.remove()


def prepare(canon_dir: Path, code_dir: Path, nodes: tuple[str, ...], report: Path) -> Run:
    """Plant the canary and build the argv; the caller runs it (sandboxed, with `environment`), then judges and
    closes the run."""
    report.unlink(missing_ok=True)
    canary = plant_canary(canon_dir, nodes)
    return Run(command(canon_dir, code_dir, nodes, report, canary), report, expected_tests(canon_dir, nodes), canary)


def judge(report: Path, expected: frozenset[str], canary: Canary) -> Judgement:
    outcomes: dict[str, list[bool]] = {}
    collect_errors: list[str] = []
    finished: int | None = None
    try:
        lines = report.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict):
            continue
        if "collect_error" in record:
            collect_errors.append(str(record["collect_error"]))
        elif "finished" in record:
            finished = record["finished"] if isinstance(record["finished"], int) else -1
        elif isinstance(record.get("test"), str):
            ok = record.get("outcome") == "passed"
            outcomes.setdefault(_base(record["test"]), []).append(ok)
    canary_seen = outcomes.pop(canary.node, None)
    results = {node: bool(outcomes.get(node)) and all(outcomes[node]) for node in expected}
    void = ""
    if canary_seen is not None and all(canary_seen):
        void = (f"the canary test {canary.node}, which must fail, was reported passing: something in the code under "
                "test changes how pytest reports results")
    elif canary_seen is None and finished is not None and not collect_errors:
        # (a collection error stops pytest before any test runs, the canary's too, and every expected test then
        # fails for want of a passing outcome: nothing can pass unseen, so that run is not void)
        void = f"the canary test {canary.node} never reported, though the run finished: tests were skipped or hidden"
    if void:
        results = dict.fromkeys(expected, False)
    notes = () if finished is not None else ("the test process ended before pytest finished (an early exit or a kill)",)
    return Judgement(results, void, tuple(collect_errors), notes)
