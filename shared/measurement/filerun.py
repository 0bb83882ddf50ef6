"""One conformance test file of another language, measured in a run of its own: the request, and its report judged as
a pytest run's is (shared/measurement/conformance.py `judge`: per-test outcomes, the finish line, canaries).

A file gets a run of its own (its own process tree, report channel and, where runs are confined, view and PID
namespace): code under test in one file's run can write only that run's channel, so it can forge outcomes of its own
file's tests at most, never another file's. shared/measurement/nodetest.py and gotest.py make one; polyglot.py makes a
requirement's whole run of them.
"""
from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from shared.export import remove_tree
from shared.measurement.canaries import Planted
from shared.measurement.conformance import Judgement, judge
from shared.process import Limits, Outcome, Request

DRIVER = Path(__file__).resolve().with_name("suiterun.py")
Confine = Callable[[tuple[str, ...], Path, tuple[Path, ...]], tuple[str, ...]]  # (argv, writable, readable) -> argv


@dataclass(frozen=True)
class FileRun:
    """folder/tmp is the run's only writable place (its HOME, TMPDIR, a build's output); `readable` what it reads
    besides the code and its toolchain."""

    language: str
    file: str  # canon's path of the test file
    folder: Path
    argv: tuple[str, ...]  # the driver's (shared/measurement/suiterun.py)
    cwd: Path
    env: Mapping[str, str]
    readable: tuple[Path, ...]
    expected: frozenset[str]
    planted: Planted
    names: Mapping[str, str]  # run name -> canon's name, of the file's real tests
    reader: Callable[[str], tuple[str, str]]  # the raw report -> (conformance's report lines, what a person reads)
    notes: tuple[str, ...] = ()
    shown_paths: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # (the run's path, canon's) in output

    @property
    def scratch(self) -> Path:
        return self.folder / "tmp"

    def request(self, *, env: Mapping[str, str], timeout: float, limits: Limits | None,
                confine: Confine | None = None) -> Request:
        own = {**env, **self.env, "HOME": str(self.scratch), "TMPDIR": str(self.scratch)}
        argv = confine(self.argv, self.scratch, self.readable) if confine else self.argv
        return Request(argv, cwd=self.cwd, env=own, timeout=timeout, grace=0.5, limits=limits, report=True)

    def _canon_node(self, node: str) -> str:
        file, _, name = node.partition("::")
        return f"{file}::{self.names.get(name, name)}" if file == self.file else node

    def judge(self, outcome: Outcome) -> Judgement:
        if outcome.report is None:
            report, shown = None, ""
        else:
            report, shown = self.reader(outcome.report)
            report = "\n".join(_renamed_line(line, self._canon_node) for line in report.splitlines())
        verdict = judge(report, self.expected, self.planted.nodes, self.planted.donors)
        text = self.shown(shown + "\n" + outcome.stderr + outcome.stdout)
        return replace(verdict, output=text.strip() + "\n", notes=verdict.notes + self.notes)

    def shown(self, text: str) -> str:
        """What a person (or the agent) reads: no line of a canary, canon's names, paths and lines."""
        canaries = {node.partition("::")[2] for node in self.planted.nodes}
        kept: list[str] = []
        hiding = False
        for line in text.splitlines():
            if any(name in line for name in canaries):
                hiding = line.startswith(("not ok", "=== RUN", "--- FAIL", "--- PASS"))
                continue
            if hiding and (line.startswith(("  ", "\t")) or not line.strip()):
                continue
            hiding = False
            for run_name, canon_name in self.names.items():
                line = line.replace(run_name, canon_name)
            for ours, theirs in self.shown_paths:
                line = line.replace(ours, theirs)
            kept.append(self._lines_as_canon(line))
        return "\n".join(kept)

    def _lines_as_canon(self, line: str) -> str:
        name = re.escape(Path(self.file).name)
        return re.sub(rf"({name}):(\d+)", lambda m: f"{m[1]}:{self.planted.original_line(self.file, int(m[2]))}", line)

    def close(self) -> None:
        remove_tree(self.folder)


def _renamed_line(line: str, rename: Callable[[str], str]) -> str:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return line
    for key in ("test", "collect_error"):
        if isinstance(record, dict) and isinstance(record.get(key), str) and "::" in record[key]:
            record[key] = rename(record[key])
    return json.dumps(record)


def driver(cwd: Path, file: str, command: tuple[str, ...], build: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The driver's argv: Banach's interpreter, isolated and without site, by absolute path."""
    built = ("--build", json.dumps(list(build))) if build else ()
    return (sys.executable, "-I", "-S", "-B", str(DRIVER), "--cwd", str(cwd), "--file", file, *built, "--", *command)


def expected_of(file: str, names: list[str], nodes: tuple[str, ...]) -> frozenset[str]:
    """The tests a run of these node ids (all of one file) must report passing."""
    named = {node for node in nodes if "::" in node}
    if len(named) < len(nodes):  # the whole file
        named |= {f"{file}::{name}" for name in names} or {f"{file}::<no test found>"}
    return frozenset(named)
