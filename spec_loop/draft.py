"""A draft: the text a person proposes for one canon file, checked before it may become a version."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from canon.model import Document, Requirement
from canon.parser import CanonSyntaxError, parse_document
from canon.reconcile import Problem, reconcile
from canon.store import REQUIREMENTS_DIR, TESTS_DIR, CanonStore
from shared.errors import CanonError


@dataclass(frozen=True)
class Draft:
    name: str  # as a person knows it: the inbox file name, or the file being edited
    target: str  # the canon path it would write, such as requirements/text.md
    content: bytes


@dataclass(frozen=True)
class Review:
    """The verdict on a draft: problems (refuse) or the writes and the change list (commit)."""

    draft: Draft
    problems: tuple[str, ...] = ()
    writes: dict[str, str | None] = field(default_factory=dict)
    changes: dict[str, list[str]] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return not self.problems

    @property
    def unchanged(self) -> bool:
        return self.accepted and not any(self.changes.values()) and not self.writes


def target_for(name: str) -> str | None:
    """Where a draft of this file name lands in canon, or None for a kind of file canon does not hold."""
    path = PurePosixPath(name)
    if path.parts and path.parts[0] in (REQUIREMENTS_DIR, TESTS_DIR) and len(path.parts) > 1:
        return str(path)
    if path.suffix == ".md":
        return f"{REQUIREMENTS_DIR}/{path.name}"
    if path.suffix == ".py" and path.name.startswith(("test_", "conftest")):
        return f"{TESTS_DIR}/{path.name}"
    return None


def _python_problem(draft: Draft) -> str | None:
    try:
        text = draft.content.decode("utf-8")
        compile(text, draft.name, "exec")
    except UnicodeDecodeError:
        return f"{draft.name}:1: not UTF-8 text; a conformance test must be a Python source file"
    except SyntaxError as exc:
        return f"{draft.name}:{exc.lineno or 1}: Python syntax error: {exc.msg}"
    except ValueError as exc:
        return f"{draft.name}:1: {exc}"
    return None


def _diff_ids(old: dict[str, Requirement], new: dict[str, Requirement]) -> dict[str, list[str]]:
    return {
        "added": sorted(new.keys() - old.keys()),
        "changed": sorted(rid for rid in new.keys() & old.keys() if new[rid].model_dump(exclude={"source"}) != old[rid].model_dump(exclude={"source"})),
        "removed": sorted(old.keys() - new.keys()),
    }


def review(store: CanonStore, draft: Draft, code_files: list[str] | None = None,
           semantic: Callable[[list[Document]], list[str]] | None = None) -> Review:
    """Parse, validate and reconcile a draft against canon's current version. Writes nothing."""
    if not draft.target:
        return Review(draft, (f"{draft.name}:1: canon holds requirement documents (*.md) and conformance tests "
                              "(test_*.py); this file is neither. Rename it or leave it out of the inbox.",))
    current_docs = store.load_documents()
    previous = {req.id: req for doc in current_docs for req in doc.requirements}
    test_sources = store.test_sources()
    existing = store.read("HEAD", draft.target) if store.head() else None
    try:
        text = draft.content.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if existing is not None and existing == text:
        return Review(draft)  # already this version: a re-delivered draft changes nothing
    proposed = [doc for doc in current_docs if doc.path != draft.target]
    replaced: dict[str, Document] = {}
    if draft.target.startswith(f"{TESTS_DIR}/"):
        problem = _python_problem(draft)
        if problem:
            return Review(draft, (problem,))
        test_sources = {**test_sources, draft.target: text}
    else:
        try:
            doc = parse_document(draft.content, draft.target)
        except CanonSyntaxError as exc:
            return Review(draft, (f"{draft.name}:{exc.line}: {exc.reason}",))
        except CanonError as exc:
            return Review(draft, (str(exc),))
        proposed.append(doc)
        replaced[draft.target] = doc
    problems = reconcile(proposed, previous=previous, replaced=replaced, test_sources=test_sources,
                         code_files=code_files or [])
    if problems:
        return Review(draft, tuple(_locate(p, draft) for p in problems))
    flagged = semantic(proposed) if semantic is not None and not draft.target.startswith(f"{TESTS_DIR}/") else []
    if flagged:
        return Review(draft, tuple(flagged))
    new = {req.id: req for doc in proposed for req in doc.requirements}
    changes = _diff_ids(previous, new)
    if draft.target.startswith(f"{TESTS_DIR}/"):
        changes["tests"] = [draft.target]
    return Review(draft, writes={draft.target: text}, changes=changes)


def _locate(problem: Problem, draft: Draft) -> str:
    """Name the draft's own file where the problem is in it, so a person knows which file to open."""
    text = str(problem)
    if problem.where.startswith(draft.target + ":") and draft.name != draft.target:
        text = text.replace(draft.target + ":", draft.name + ":", 1)
    return text
