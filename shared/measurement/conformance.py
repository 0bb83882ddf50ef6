"""What measures a requirement's conformance tests, defined once for plan, build and spec's dry run.

A run is judged by per-test outcomes that `shared/measurement/testrun.py` writes to a report channel as each test ends,
never by the exit code: the code under test can make its own process exit 0. The channel is a pipe that the
measuring process made for this run (shared/process.py), so no other check can reach it by a path. The tests
expected to run are read from canon's test files (trusted, in canon) without importing them; an expected test
with no passing outcome is a failing test, and a file that fails to import fails every test in it.

A run measures nothing (it is void, and every expected test fails) when:
- the report does not end with pytest's own "finished" line: an early exit, a crash, a kill or a time-out;
- a line of it is not one the runner writes, it reports a test from a file pytest could not collect, or it
  overfilled the channel;
- any of its canaries (must-fail tests hidden among canon's, shared/measurement/canaries.py) is reported passing,
  or one is never reported while its file was collected.

The judge's material is not on disk where the code can read it. Each run gets a folder of its own holding canon's
tree with every Python file empty (placeholders, so that pytest finds the paths); the sources themselves, with the
run's own test names (shared/measurement/renaming.py) and its canaries, reach the runner on its standard input, and
the runner loads them from memory before the code's first import. A held-back run keeps them out of tracebacks too.
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from shared.export import remove_tree
from shared.measurement import plugins
from shared.measurement.canaries import Planted, hide, plant
from shared.measurement.renaming import Renamed, rename
from shared.process import Limits, Outcome, Request

RUNNER = Path(__file__).resolve().with_name("testrun.py")
VOID_PREFIX = "measurement void"
REPORT_KEYS = ({"test", "when", "outcome"}, {"collect_error"}, {"finished"})


@dataclass(frozen=True)
class Judgement:
    results: dict[str, bool]  # expected node id -> passed
    void: str = ""  # why the whole measurement cannot be believed, or ""
    collect_errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    canaries_counted: dict[str, str] = field(default_factory=dict)  # canary -> how pytest's closing line counted it
    output: str = ""  # the run's output as a person (or the agent) may read it: no trace of the canaries

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


def _file(node: str) -> str:
    return node.split("::", 1)[0]


def expected_tests(canon_dir: Path, nodes: tuple[str, ...]) -> frozenset[str]:
    """The test ids a run of these node ids must report, read from the files' syntax, never imported."""
    expected: set[str] = set()
    for node in nodes:
        if "::" in node:
            expected.add(_base(node))
            continue
        try:
            tree = ast.parse((canon_dir / node).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError, RecursionError):
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


def environment(base: Mapping[str, str]) -> dict[str, str]:
    """What a conformance run adds to its sandbox's environment."""
    return {**base, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_ADDOPTS": ""}


@dataclass(frozen=True)
class Run:
    """One conformance run, ready to start: its argv, its sources, and what its report is judged against.

    folder/canon  canon's tree, every Python file an empty placeholder, read-only (pytest finds its paths there)
    folder/tmp    the run's HOME and TMPDIR: the only place it may write"""

    argv: tuple[str, ...]
    folder: Path
    expected: frozenset[str]
    planted: Planted
    renamed: Renamed
    sources: str  # JSON {absolute path: source} for the runner's standard input
    canon_dir: Path  # the original, whose paths and line numbers the output is shown with
    code_dir: Path  # where it runs

    @property
    def canon(self) -> Path:
        return self.folder / "canon"

    @property
    def scratch(self) -> Path:
        return self.folder / "tmp"

    def request(self, *, env: Mapping[str, str], timeout: float, limits: Limits | None,
                wrap: Callable[[tuple[str, ...]], tuple[str, ...]] | None = None) -> Request:
        """The run as the one subprocess runner takes it, in the code's root: with its report channel, its sources on
        standard input, HOME and TMPDIR its own."""
        own = {**environment(env), "HOME": str(self.scratch), "TMPDIR": str(self.scratch)}
        return Request(wrap(self.argv) if wrap else self.argv, cwd=self.code_dir, env=own, stdin=self.sources,
                       timeout=timeout, grace=0.5, limits=limits, report=True)

    def judge(self, outcome: Outcome) -> Judgement:
        report = None if outcome.report is None else _named_as_canon(outcome.report, self.renamed)
        verdict = judge(report, self.expected, self.planted.nodes, self.planted.donors)
        # pytest names canon's files by absolute path, or relative to the code's root where it runs
        prefixes = [(str(self.canon), str(self.canon_dir)),
                    (os.path.relpath(self.canon, self.code_dir), os.path.relpath(self.canon_dir, self.code_dir))]
        shown = hide(outcome.stdout + outcome.stderr, self.planted, prefixes, verdict.canaries_counted)
        return replace(verdict, output=self.renamed.shown(shown))

    def close(self) -> None:
        remove_tree(self.folder)


def _named_as_canon(report: str, renamed: Renamed) -> str:
    """The report with each test's run name turned back into canon's (a canary keeps its own); a line that is not
    JSON is left for the judge to refuse."""
    lines = []
    for line in report.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            lines.append(line)
            continue
        if isinstance(record, dict) and isinstance(record.get("test"), str):
            record["test"] = renamed.original(record["test"])
        elif isinstance(record, dict) and isinstance(record.get("collect_error"), str):
            record["collect_error"] = renamed.original(record["collect_error"])
        lines.append(json.dumps(record))
    return "\n".join(lines)


def _placeholders(canon_dir: Path, copy: Path) -> dict[str, str]:
    """canon's tree into copy, every .py file left empty there; returns their sources by relative path."""
    sources: dict[str, str] = {}

    def copy_one(source: str, target: str) -> None:
        if target.endswith(".py"):
            sources[os.path.relpath(target, copy)] = Path(source).read_text(encoding="utf-8", errors="replace")
            Path(target).touch()
        else:
            shutil.copyfile(source, target)

    shutil.copytree(canon_dir, copy, symlinks=True, copy_function=copy_one)
    return sources


def prepare(canon_dir: Path, code_dir: Path, nodes: tuple[str, ...], folder: Path, *, python: str = sys.executable,
            roots: tuple[str, ...] = ("",), show_sources: bool = True) -> Run:
    """canon's tree into folder/canon with placeholders, the sources renamed and planted with canaries in memory,
    folder/tmp made; the caller runs `Run.request` (sandboxed to write only folder/tmp), then judges its outcome and
    closes the run. python and roots: the project's interpreter and import roots (shared/environment/).
    show_sources: tracebacks may quote the tests' lines (not for a held-back run, whose output no one reads)."""
    remove_tree(folder)
    folder.mkdir(parents=True)
    copy = folder / "canon"
    sources = _placeholders(canon_dir, copy)
    files = list(dict.fromkeys(_file(node) for node in nodes))
    renamed = rename(sources, files)
    running: dict[str, set[str] | None] = {}
    for node in nodes:
        file, *parts = renamed.run_node(node).split("::")
        if not parts:
            running[file] = None
        elif len(parts) == 1 and running.get(file, set()) is not None:
            running.setdefault(file, set()).add(parts[0])  # type: ignore[union-attr]
    planted_sources, planted = plant(renamed.sources, files, renamed.taken, running=running)
    planted = replace(planted, donors={canary: renamed.original(donor) for canary, donor in planted.donors.items()})
    for file in set(planted_sources) - set(sources):  # a canary file of its own
        (copy / file).parent.mkdir(parents=True, exist_ok=True)
        (copy / file).touch()
    for path in [*copy.rglob("*"), copy]:
        if not path.is_symlink():
            path.chmod(0o555 if path.is_dir() else 0o444)
    (folder / "tmp").mkdir()
    ini = copy / plugins.INI
    named = plugins.named(ini.read_text(encoding="utf-8", errors="replace") if ini.is_file() else None, sources)
    argv = command(copy, code_dir, tuple(renamed.run_node(node) for node in nodes), planted.nodes, python, roots,
                   show_sources, named)
    stdin = json.dumps({str(copy / rel): text for rel, text in planted_sources.items()})
    return Run(argv, folder, expected_tests(canon_dir, nodes), planted, renamed, stdin, canon_dir, code_dir)


def command(copy: Path, code_dir: Path, nodes: tuple[str, ...], canaries: tuple[str, ...], python: str,
            roots: tuple[str, ...], show_sources: bool = True, plugin_names: tuple[str, ...] = ()) -> tuple[str, ...]:
    """argv of one run: our runner in isolated mode, without the site module (shared/measurement/testrun.py adds
    site-packages without running what they hold), under the project's interpreter, on the copy's tests and the
    canaries, with the code's import roots first on sys.path. plugin_names: those canon names (shared/measurement/plugins.py),
    which the runner imports from the environment before the code's roots; the rest of pytest's options are canon's ini
    (the copy's, never the code's) and ours after it, which win."""
    whole_files = {node for node in nodes if "::" not in node}
    targets = [str(copy / node) for node in nodes]
    targets += [str(copy / canary) for canary in canaries if _file(canary) not in whole_files]
    ini = next((copy / n for n in ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg") if (copy / n).is_file()), None)
    code = [flag for root in roots for flag in ("--code", str(code_dir / root))]  # a root of "" is code_dir itself
    shown = [] if show_sources else ["--no-source"]
    named = [flag for name in plugin_names for flag in ("--plugin", name)]
    return (python, "-I", "-S", "-B", str(RUNNER), *code, *named, *shown, "--",
            "-q", "-p", "no:cacheprovider", "--no-header", "--continue-on-collection-errors", "--import-mode=prepend",
            f"--rootdir={copy}", f"--confcutdir={copy}",
            "-c", str(ini) if ini else os.devnull, *targets)


def _read(report: str) -> tuple[dict[str, list[tuple[str, str]]], list[str], int | None, str]:
    """(phase, outcome) per test, collection errors, pytest's exit status, and what is wrong with the stream ("" if
    nothing)."""
    phases: dict[str, list[tuple[str, str]]] = {}
    collect_errors: list[str] = []
    finished: int | None = None
    for number, line in enumerate(report.splitlines(), 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            return phases, collect_errors, finished, f"line {number} of the report is not JSON"
        if not isinstance(record, dict) or set(record) not in REPORT_KEYS:
            return phases, collect_errors, finished, f"line {number} of the report is not one the runner writes"
        if finished is not None:
            return phases, collect_errors, finished, f"line {number} of the report comes after pytest finished"
        if "collect_error" in record:
            collect_errors.append(str(record["collect_error"]))
        elif "finished" in record:
            finished = record["finished"] if isinstance(record["finished"], int) else -1
        elif isinstance(record["test"], str):
            phases.setdefault(_base(record["test"]), []).append((str(record["when"]), str(record["outcome"])))
    return phases, collect_errors, finished, ""


def _counted_as(phases: list[tuple[str, str]]) -> str:
    """How pytest's closing line counts a test with these phases."""
    if any(when != "call" and outcome == "failed" for when, outcome in phases):
        return "error"
    return next((outcome for when, outcome in phases if when == "call"), "skipped")


def judge(report: str | None, expected: frozenset[str], canaries: tuple[str, ...],
          donors: Mapping[str, str] | None = None) -> Judgement:
    """donors: canary -> the test it copies. A canary passing voids the run when the test it copies passed too (no
    code that computes its answers passes both) or when it copies none (it cannot pass at all)."""
    if report is None:
        return Judgement(dict.fromkeys(expected, False), "the report overfilled its channel, or there was none")
    phases, collect_errors, finished, malformed = _read(report)
    seen = {canary: phases.pop(canary, None) for canary in canaries}
    results = {node: bool(phases.get(node)) and all(outcome == "passed" for _, outcome in phases[node])
               for node in expected}
    uncollected = {error for error in collect_errors if "::" not in error}  # whole files pytest could not import
    donors = donors or {}
    passing = [canary for canary, got in seen.items() if got is not None and any(o == "passed" for _, o in got)
               and (canary not in donors or results.get(donors[canary], False))]
    missing = [canary for canary, got in seen.items() if got is None and _file(canary) not in uncollected]
    impossible = [node for node in phases if any(node.startswith(error + "::") for error in collect_errors)]
    void = ""
    if malformed:
        void = f"{malformed}: the stream was written by something other than the runner"
    elif impossible:
        void = (f"{impossible[0]} was reported, though pytest could not collect what holds it: the stream was written "
                "by something other than the runner")
    elif finished is None:
        void = ("the test process ended before pytest finished (an early exit, a crash, a kill or a time-out): "
                "a run that did not finish measures nothing")
    elif passing:
        void = (f"{len(passing)} of the {len(canaries)} canary tests, which must fail, were reported passing with the tests "
                "they copy: something in the code under test changes how pytest reports results, or answers from the "
                "test rather than from its input")
    elif missing:
        void = f"{len(missing)} of the {len(canaries)} canary tests never reported, though the run finished: tests were " \
               "skipped or hidden"
    if void:
        results = dict.fromkeys(expected, False)
    counted = {canary: _counted_as(got) for canary, got in seen.items() if got is not None}
    return Judgement(results, void, tuple(collect_errors), canaries_counted=counted)
