"""Reconcile a proposed canon before it is committed: every problem names the requirement and file:line."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from canon.check_paths import KnownPaths
from canon.model import Document, Requirement
from canon.scope import matches, overlap
from shared.measurement.suites import defines, is_test_file


@dataclass(frozen=True)
class Problem:
    where: str  # file:line
    requirement: str
    message: str

    def __str__(self) -> str:
        prefix = f"{self.where}: {self.requirement}: " if self.requirement else f"{self.where}: "
        return prefix + self.message


def _duplicates(documents: list[Document]) -> list[Problem]:
    first: dict[str, Requirement] = {}
    problems = []
    for doc in documents:
        for req in doc.requirements:
            if req.id in first:
                problems.append(Problem(str(req.source), req.id, (
                    f"duplicate id; it is already defined at {first[req.id].source}. "
                    "Give this one a new id, or change the requirement where it is defined")))
            else:
                first[req.id] = req
    return problems


def _dangling(reqs: dict[str, Requirement]) -> list[Problem]:
    problems = []
    for req in reqs.values():
        for dep in req.depends_on:
            if dep not in reqs:
                problems.append(Problem(str(req.source), req.id, (
                    f"depends_on names {dep}, which no canon document defines; "
                    f"add {dep} in the same change, or drop it from depends_on")))
        for other in req.conflicts_with:
            if other not in reqs:
                problems.append(Problem(str(req.source), req.id, (
                    f"conflicts_with names {other}, which no canon document defines; "
                    f"add {other} in the same change, or drop it from conflicts_with")))
    return problems


def _cycles(reqs: dict[str, Requirement]) -> list[Problem]:
    state: dict[str, int] = {}  # 1 visiting, 2 done
    problems: list[Problem] = []

    def visit(rid: str, trail: list[str]) -> None:
        state[rid] = 1
        for dep in reqs[rid].depends_on:
            if dep not in reqs:
                continue
            if state.get(dep) == 1:
                cycle = trail[trail.index(dep):] + [dep]
                req = reqs[cycle[0]]
                problems.append(Problem(str(req.source), req.id, "dependency cycle: " + " -> ".join(cycle)
                                        + "; drop one of these depends_on"))
            elif dep not in state:
                visit(dep, trail + [dep])
        state[rid] = 2

    for rid in sorted(reqs):
        if rid not in state:
            visit(rid, [rid])
    return problems


def _contradictions(reqs: dict[str, Requirement], code_files: list[str]) -> list[Problem]:
    problems = []
    for req in reqs.values():
        for other_id in req.conflicts_with:
            other = reqs.get(other_id)
            if other is None or other_id < req.id and req.id in other.conflicts_with:
                continue
            shared = overlap(req.paths, other.paths, code_files)
            if shared:
                problems.append(Problem(
                    str(req.source), req.id,
                    f"declared mutually exclusive with {other_id} ({other.source}), yet both grant {', '.join(shared)}: "
                    "no code can satisfy both. Narrow one scope or drop one requirement.",
                ))
    return problems


def _how_to_add_test(req: Requirement, file: str) -> str:
    document, test = PurePosixPath(req.source.file).name, PurePosixPath(file)
    if len(test.parts) > 2:  # the inbox is flat: a test in a subfolder of tests/ comes with its canon path
        return f"run: spec-loop add {document} {test} (from a folder holding {test}; both land as one canon version)"
    return (f"put {test.name} in the inbox together with {document} (both land as one canon version), "
            f"or run: spec-loop add {document} {test.name}")


def _missing_tests(reqs: dict[str, Requirement], test_sources: dict[str, str]) -> list[Problem]:
    problems = []
    for req in reqs.values():
        for field, node in [*(("tests", node) for node in req.tests), *(("held_back", node) for node in req.held_back)]:
            file, _, name = node.partition("::")
            if file not in test_sources:
                problems.append(Problem(str(req.source), req.id, f"{field} names {file}, which is not among canon's "
                                        f"conformance tests; {_how_to_add_test(req, file)}"))
                continue
            function = name if not file.endswith(".py") else name.split("::")[-1].split("[")[0]
            if function and not defines(test_sources[file], file, name):
                problems.append(Problem(str(req.source), req.id, f"{field} names {node}, but {file} defines no {function}; "
                                        f"correct the name, or add {function} to {file} ({_how_to_add_test(req, file)})"))
    return problems


def _missing_sealed(reqs: dict[str, Requirement], sealed_files: frozenset[str]) -> list[Problem]:
    problems = []
    for req in reqs.values():
        for path in req.sealed:
            if path not in sealed_files:
                name = PurePosixPath(path).name
                problems.append(Problem(str(req.source), req.id, f"sealed names {path}, which is not among canon's sealed "
                                        f"cases; put {name} in the inbox together with {PurePosixPath(req.source.file).name}"
                                        f" (both land as one canon version), or run: spec-loop add "
                                        f"{PurePosixPath(req.source.file).name} {name}"))
    return problems


def _orphan_tests(reqs: dict[str, Requirement], arriving: frozenset[str]) -> list[Problem]:
    """A conformance test file this change brings that no requirement names: nothing would ever run it, and a reader
    of canon would believe it measures something."""
    named = {node.partition("::")[0] for req in reqs.values() for node in (*req.tests, *req.held_back, *req.sealed)}
    return [Problem(f"{file}:1", "", "no requirement names this conformance test in its `tests:`, so nothing would ever "
                    "run it; name it in the requirement it checks (tests: " + file + "), or leave the file out")
            for file in sorted(arriving) if is_test_file(file) and file not in named] + [
        Problem(f"{file}:1", "", "no requirement names these sealed cases in its `sealed:`, so nothing would ever run "
                "them; name them in the requirement they measure (sealed: " + file + "), or leave the file out")
        for file in sorted(arriving) if file.startswith("sealed/") and file not in named]


def _held_back_in_view(reqs: dict[str, Requirement]) -> list[Problem]:
    """A test file named as held back by one requirement and as visible by any (itself or another) would be exported to
    every agent: it would be held back from nothing."""
    visible = {node.partition("::")[0]: req.id for req in reqs.values() for node in req.tests}
    return [Problem(str(req.source), req.id, f"held_back names {file}, which {visible[file]} names under tests:, where "
                    "every agent reads it; a held-back test file must be named by held_back: alone (split the file)")
            for req in reqs.values() for file in sorted({node.partition("::")[0] for node in req.held_back})
            if file in visible]


def _checks_that_changed(req: Requirement, previous: dict[str, Requirement]) -> bool:
    before = previous.get(req.id)
    return before is None or before.checks != req.checks or before.paths != req.paths


def _missing_check_paths(reqs: dict[str, Requirement], previous: dict[str, Requirement], code: KnownPaths,
                         canon: KnownPaths) -> list[Problem]:
    """Checks that name a file neither the code has nor the agent may create (it is outside the requirement's
    paths): build could spend every attempt on them and never fix them. Only new and changed checks are
    asked, so that the code moving on does not refuse a change to something else."""
    problems = []
    for req in reqs.values():
        if not _checks_that_changed(req, previous):
            continue
        for index, command in enumerate(req.checks):
            for path in code.missing(command):
                if req.paths and matches(path.rstrip("/"), req.paths):
                    continue  # the requirement lets the agent create it
                where = req.source.of_check(index)
                if canon.exists(path):
                    problems.append(Problem(where, req.id, (
                        f"checks names {path}, which is one of canon's conformance tests, but checks run in the code, "
                        f"where there is no {path}; name it under 'tests:' instead (tests: {path})")))
                else:
                    problems.append(Problem(where, req.id, (
                        f"checks names {path}, which is neither in the code (at its current commit) nor among canon's "
                        f"files; add it to the code, or make it a conformance test (put it in the inbox together with "
                        f"{PurePosixPath(req.source.file).name} and name it under 'tests:'), or correct the path")))
    return problems


def _silent_removals(old: dict[str, Requirement], new: dict[str, Requirement], replaced: dict[str, Document]) -> list[Problem]:
    problems = []
    for path, draft in replaced.items():
        dropped = sorted(
            rid for rid, req in old.items() if req.source.file == path and rid not in new and rid not in draft.removes
        )
        if dropped:
            problems.append(Problem(
                f"{path}:1", "",
                f"this draft would remove {', '.join(dropped)} without saying so; keep them, or list them in the header "
                f"as 'removes: {', '.join(dropped)}'",
            ))
    return problems


def reconcile(
    proposed: list[Document],
    *,
    previous: dict[str, Requirement],
    replaced: dict[str, Document],
    test_sources: dict[str, str],
    code_files: list[str] = (),  # type: ignore[assignment]
    canon_files: list[str] | None = None,
    arriving_tests: frozenset[str] = frozenset(),
    sealed_files: frozenset[str] | None = None,
) -> list[Problem]:
    """All problems of the proposed canon; empty means it may be committed.

    replaced: the drafts of this intake, by the canon path they would take (for the removal check).
    arriving_tests: the conformance test and sealed case files this intake writes (each must be named by a requirement).
    sealed_files: canon's files of sealed cases after this intake; None leaves the check that each named one exists out.
    canon_files: every file of the proposed canon; given, the files checks name are looked up in it and
    in code_files (the code's files at its current commit). None leaves that check out.
    """
    problems = _duplicates(proposed)
    reqs: dict[str, Requirement] = {}
    for doc in proposed:
        for req in doc.requirements:
            reqs.setdefault(req.id, req)
    problems += _dangling(reqs)
    problems += _cycles(reqs)
    problems += _contradictions(reqs, list(code_files))
    problems += _missing_tests(reqs, test_sources)
    if sealed_files is not None:
        problems += _missing_sealed(reqs, sealed_files)
    problems += _orphan_tests(reqs, arriving_tests)
    problems += _held_back_in_view(reqs)
    problems += _silent_removals(previous, reqs, replaced)
    if canon_files is not None:
        problems += _missing_check_paths(reqs, previous, KnownPaths(code_files), KnownPaths(canon_files))
    return problems
