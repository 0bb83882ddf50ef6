"""A requirement's conformance run whatever language its tests are in: pytest's run for its Python files
(shared/measurement/conformance.py, one run), one run per JavaScript/TypeScript file (nodetest.py) and per Go file
(gotest.py), each with its own report channel and canaries; one verdict, judged by the same rules.

    run = prepare(canon_dir, code_dir, nodes, folder, python=..., roots=..., node_modules=..., go_modules=...)
    outcomes = [process.run(request) for request in run.requests(env=..., timeout=..., limits=..., confine=...)]
    verdict = run.judge(outcomes)
    run.close()

confine(argv, writable, readable): how the caller confines one run (its view: it writes `writable` alone and reads
`readable` besides the code and its toolchains).
"""
from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from shared.measurement import conformance, gotest, nodetest
from shared.measurement.conformance import Judgement
from shared.measurement.filerun import Confine, FileRun
from shared.measurement.suites import runner_of
from shared.process import Limits, Outcome, Request


def other_languages(nodes: tuple[str, ...]) -> bool:
    """Whether any of these node ids is a test file that pytest does not run."""
    return any(runner_of(node.split("::", 1)[0]) in ("node", "go") for node in nodes)


@dataclass(frozen=True)
class AnyRun:
    python_run: conformance.Run | None
    files: tuple[FileRun, ...]

    def requests(self, *, env: Mapping[str, str], timeout: float, limits: Limits | None,
                 confine: Confine | None = None) -> list[Request]:
        found = []
        if self.python_run is not None:
            run_ = self.python_run
            wrap = (lambda argv: confine(argv, run_.scratch, (run_.canon,))) if confine else None
            found.append(run_.request(env=env, timeout=timeout, limits=limits, wrap=wrap))
        found += [file.request(env=env, timeout=timeout, limits=limits, confine=confine) for file in self.files]
        return found

    def judge(self, outcomes: list[Outcome]) -> Judgement:
        verdicts = []
        if self.python_run is not None:
            verdicts.append(self.python_run.judge(outcomes[0]))
            outcomes = outcomes[1:]
        verdicts += [file.judge(outcome) for file, outcome in zip(self.files, outcomes, strict=True)]
        return combined(verdicts)

    @property
    def writable(self) -> tuple[Path, ...]:
        return tuple([*([self.python_run.scratch] if self.python_run else []), *(f.scratch for f in self.files)])

    def close(self) -> None:
        if self.python_run is not None:
            self.python_run.close()
        for file in self.files:
            file.close()


def label(nodes: tuple[str, ...]) -> str:
    """How a run of these node ids is named to people: by its runners ("node --test tests/a.test.ts")."""
    words = {"node": "node --test", "go": "go test"}
    runners = list(dict.fromkeys(words.get(runner_of(node.split("::", 1)[0]) or "", "pytest") for node in nodes))
    return " + ".join(runners) + " " + " ".join(nodes)


def merged(outcomes: list[Outcome]) -> Outcome:
    """Several runs of one check (a file a run) as one outcome: timed out when any was, their times added."""
    return replace(outcomes[0], returncode=max(o.returncode for o in outcomes), timed_out=any(o.timed_out for o in outcomes),
                   cancelled=any(o.cancelled for o in outcomes), capped=next((o.capped for o in outcomes if o.capped), ""),
                   duration=sum(o.duration for o in outcomes), stdout="".join(o.stdout for o in outcomes),
                   stderr="".join(o.stderr for o in outcomes))


def combined(verdicts: list[Judgement]) -> Judgement:
    """One verdict of several runs: every test's outcome; void when any run is (the first one's reason)."""
    results: dict[str, bool] = {}
    for verdict in verdicts:
        results.update(verdict.results)
    void = next((verdict.void for verdict in verdicts if verdict.void), "")
    if void:
        results = dict.fromkeys(results, False)
    return Judgement(results, void, tuple(error for v in verdicts for error in v.collect_errors),
                     tuple(note for v in verdicts for note in v.notes),
                     {canary: how for v in verdicts for canary, how in v.canaries_counted.items()},
                     "\n".join(v.output.strip() for v in verdicts if v.output.strip()))


def prepare(canon_dir: Path, code_dir: Path, nodes: tuple[str, ...], folder: Path, *, python: str = sys.executable,
            roots: tuple[str, ...] = ("",), show_sources: bool = True, node_modules: Path | None = None,
            go_modules: Path | None = None) -> AnyRun:
    """Each file's run in a folder of its own under folder; a file no runner measures fails as a test not found."""
    by_file: dict[str, list[str]] = {}
    for node in nodes:
        by_file.setdefault(node.split("::", 1)[0], []).append(node)
    python_nodes = tuple(node for file, named in by_file.items() if runner_of(file) not in ("node", "go")
                         for node in named)
    python_run = conformance.prepare(canon_dir, code_dir, python_nodes, folder / "pytest", python=python, roots=roots,
                                     show_sources=show_sources) if python_nodes else None
    taken: set[str] = set()
    files: list[FileRun] = []
    try:
        for index, (file, named) in enumerate(by_file.items()):
            language = runner_of(file)
            place = folder / f"{index}-{language}"
            if language == "node":
                files.append(nodetest.prepare(canon_dir, code_dir, file, tuple(named), place,
                                              node_modules=node_modules, taken=taken))
            elif language == "go":
                files.append(gotest.prepare(canon_dir, code_dir, file, tuple(named), place, go_modules=go_modules,
                                            taken=taken))
    except BaseException:
        for made in files:
            made.close()
        if python_run is not None:
            python_run.close()
        raise
    return AnyRun(python_run, tuple(files))


__all__ = ["AnyRun", "combined", "label", "merged", "other_languages", "prepare"]
