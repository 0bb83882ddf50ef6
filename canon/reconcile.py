"""Reconcile a proposed canon before it is committed: every problem names the requirement and file:line."""
from __future__ import annotations

import re
from dataclasses import dataclass

from canon.model import Document, Requirement
from canon.scope import overlap


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
                problems.append(Problem(str(req.source), req.id, f"duplicate id; it is already defined at {first[req.id].source}"))
            else:
                first[req.id] = req
    return problems


def _dangling(reqs: dict[str, Requirement]) -> list[Problem]:
    problems = []
    for req in reqs.values():
        for dep in req.depends_on:
            if dep not in reqs:
                problems.append(Problem(str(req.source), req.id, f"depends_on names {dep}, which no canon document defines"))
        for other in req.conflicts_with:
            if other not in reqs:
                problems.append(Problem(str(req.source), req.id, f"conflicts_with names {other}, which no canon document defines"))
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
                problems.append(Problem(str(req.source), req.id, "dependency cycle: " + " -> ".join(cycle)))
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


def _missing_tests(reqs: dict[str, Requirement], test_sources: dict[str, str]) -> list[Problem]:
    problems = []
    for req in reqs.values():
        for node in req.tests:
            file, _, name = node.partition("::")
            if file not in test_sources:
                problems.append(Problem(str(req.source), req.id, f"tests names {file}, which is not among canon's conformance tests"))
                continue
            function = name.split("::")[-1].split("[")[0]
            if function and not re.search(rf"^\s*(?:async\s+)?def {re.escape(function)}\b|^class {re.escape(function)}\b",
                                          test_sources[file], re.MULTILINE):
                problems.append(Problem(str(req.source), req.id, f"tests names {node}, but {file} defines no {function}"))
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
) -> list[Problem]:
    """All problems of the proposed canon; empty means it may be committed.

    replaced: the drafts of this intake, by the canon path they would take (for the removal check).
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
    problems += _silent_removals(previous, reqs, replaced)
    return problems
