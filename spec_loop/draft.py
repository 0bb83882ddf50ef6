"""A draft: the text a person proposes for one canon file. Drafts are reviewed as a change (one or more taken
together, such as a requirement and the conformance tests it names) before they may become one version."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from canon.model import Document, Requirement
from canon.parser import CanonSyntaxError, parse_document
from canon.pytest_config import INI
from canon.pytest_config import problems as ini_problems
from canon.reconcile import reconcile
from canon.removal import orphaned_tests, remove_elsewhere
from canon.store import HELD_BACK_DIR, REQUIREMENTS_DIR, SEALED_DIR, TESTS_DIR, CanonStore, as_node_path, held_back_path
from shared.errors import CanonError
from shared.measurement.cases import CasesError, load_cases
from shared.measurement.suites import runner_of


@dataclass(frozen=True)
class Draft:
    name: str  # as a person knows it: the inbox file name, or the file being edited
    target: str  # the canon path it would write, such as requirements/text.md
    content: bytes


@dataclass(frozen=True)
class Review:
    """The verdict on a change (one draft or several, taken together): problems (refuse) or the writes and
    the change list (commit)."""

    drafts: tuple[Draft, ...]
    problems: tuple[str, ...] = ()
    writes: dict[str, str | None] = field(default_factory=dict)
    changes: dict[str, list[str]] = field(default_factory=dict)
    documents: tuple[Document, ...] = ()  # canon's documents as the change would leave them
    # what the journal (which build can read) records instead of problems: none of a held-back test's output
    journal_problems: tuple[str, ...] | None = None

    @property
    def accepted(self) -> bool:
        return not self.problems

    @property
    def unchanged(self) -> bool:
        return self.accepted and not any(self.changes.values()) and not self.writes


def target_for(name: str) -> str | None:
    """Where a draft of this file name lands in canon, or None for a kind of file canon does not hold."""
    path = PurePosixPath(name)
    if path.name == INI:
        return INI  # canon's pytest configuration, at its root (canon/pytest_config.py)
    if path.parts and path.parts[0] in (REQUIREMENTS_DIR, TESTS_DIR, SEALED_DIR) and len(path.parts) > 1:
        return str(path)
    if path.suffix == ".json":
        return f"{SEALED_DIR}/{path.name}"
    if path.suffix == ".md":
        return f"{REQUIREMENTS_DIR}/{path.name}"
    if path.suffix == ".py" and path.name.startswith(("test_", "conftest")):
        return f"{TESTS_DIR}/{path.name}"
    if runner_of(path.name) in ("node", "go"):  # a conformance test in the project's own language
        return f"{TESTS_DIR}/{path.name}"
    return None


def _python_problem(draft: Draft) -> str | None:
    try:
        text = draft.content.decode("utf-8")
        compile(text, draft.name, "exec")
    except UnicodeDecodeError:
        return f"{draft.name}:1: not UTF-8 text; a conformance test must be a Python source file"
    except SyntaxError as exc:
        return (f"{draft.name}:{exc.lineno or 1}: Python syntax error: {exc.msg}; a conformance test must compile "
                f"(try: python -m py_compile {draft.name})")
    except ValueError as exc:
        return f"{draft.name}:1: {exc}"
    return None


def _text_problem(draft: Draft) -> str | None:
    """A test file of another language is read as text (its tests by name, shared/measurement/suites.py); it is compiled
    by its own toolchain when it runs, where a syntax error is a file that does not run."""
    try:
        draft.content.decode("utf-8")
    except UnicodeDecodeError:
        return f"{draft.name}:1: not UTF-8 text; a conformance test must be a source file"
    return None


def _diff_ids(old: dict[str, Requirement], new: dict[str, Requirement]) -> dict[str, list[str]]:
    return {
        "added": sorted(new.keys() - old.keys()),
        "changed": sorted(rid for rid in new.keys() & old.keys()
                          if new[rid].model_dump(exclude={"source"}) != old[rid].model_dump(exclude={"source"})),
        "removed": sorted(old.keys() - new.keys()),
    }


def _unplaceable(drafts: tuple[Draft, ...]) -> list[str]:
    """Drafts that have no place in canon, or whose place another draft of the change takes too."""
    problems: list[str] = []
    first: dict[str, str] = {}
    for draft in drafts:
        if not draft.target:
            problems.append(f"{draft.name}:1: canon holds requirement documents (*.md), conformance tests (test_*.py "
                            "with their conftest.py, *.test.ts or *.test.js, *_test.go), files of sealed cases (*.json) "
                            "and its pytest.ini; this file is none of them. Rename it or leave it out of the inbox (a "
                            "project's pytest options come in with: spec-loop add --from-code pyproject.toml).")
        elif draft.target in first:
            problems.append(f"{draft.name}:1: {first[draft.target]} in the same change lands at {draft.target} too; "
                            "keep one of them")
        else:
            first[draft.target] = draft.name
    return problems


def review(store: CanonStore, drafts: Sequence[Draft], code_files: list[str] | None = None,
           semantic: Callable[[list[Document]], list[str]] | None = None) -> Review:
    """Parse, validate and reconcile a change against canon's current version, its drafts together, so
    that a requirement and the conformance tests it names are judged as one. Writes nothing.

    code_files: the code's files at its current commit, which the files a check names are looked up in
    (with canon's); None when there is no code to look in.
    """
    change = tuple(sorted(drafts, key=lambda d: d.name))  # the order drafts arrive in changes nothing
    problems = _unplaceable(change)
    if problems:
        return Review(change, tuple(problems))
    current_docs = store.load_documents()
    previous = {req.id: req for doc in current_docs for req in doc.requirements}
    test_sources = store.test_sources()
    has_head = store.head() is not None
    writes: dict[str, str | None] = {}
    parsed: dict[str, Document] = {}
    broken_tests: list[str] = []  # the change is still reconciled, so that every file hears of its problems
    for draft in change:
        if draft.target.startswith(f"{SEALED_DIR}/"):
            text = draft.content.decode("utf-8", errors="replace")
            try:
                load_cases(text, draft.name)
            except CasesError as exc:
                broken_tests.append(str(exc))
                continue
        elif draft.target == INI:
            text = draft.content.decode("utf-8", errors="replace")
            ini_broken = [f"{draft.name}:{problem}" for problem in ini_problems(text)]
            if ini_broken:
                broken_tests += ini_broken
                continue
        elif draft.target.startswith(f"{TESTS_DIR}/") or draft.target == "conftest.py":
            problem = _python_problem(draft) if draft.target.endswith(".py") else _text_problem(draft)
            text = draft.content.decode("utf-8", errors="replace")
            if draft.target.endswith(".py") or runner_of(draft.target):
                test_sources[draft.target] = text
            if problem:
                broken_tests.append(problem)
                continue
        else:
            try:
                parsed[draft.target] = parse_document(draft.content, draft.target)
            except CanonSyntaxError as exc:  # every problem of the document at once
                problems.extend(f"{draft.name}:{line}: {reason}" for line, reason in exc.problems)
                continue
            except CanonError as exc:
                problems.append(str(exc))
                continue
            text = draft.content.decode("utf-8")
        if stored_text(store, draft.target) != text:
            writes[draft.target] = text
    if problems:  # a document that does not parse: what it says is unknown, so the rest is not judged by it
        return Review(change, tuple(problems + broken_tests))
    removal = remove_elsewhere(current_docs, parsed, lambda path: store.read("HEAD", path) if has_head else None)
    if removal.problems:
        return Review(change, tuple(locate(problem, change) for problem in removal.problems))
    for target, doc in parsed.items():
        if not doc.requirements:  # a removal alone: the draft itself is no document of canon
            writes.pop(target, None)
            if has_head and store.read("HEAD", target) is not None:
                writes[target] = None
    writes.update(removal.writes)
    if not writes and not broken_tests:
        return Review(change)  # already this version: a re-delivered change changes nothing
    proposed = [doc for doc in current_docs if doc.path not in parsed and doc.path not in removal.documents]
    proposed += [doc for doc in [*parsed.values(), *removal.documents.values()] if doc is not None and doc.requirements]
    stored = set(store.files()) if has_head else set()
    for test in orphaned_tests(current_docs, proposed, [as_node_path(path) for path in stored]):
        if test not in writes:  # a test file the change brings decides for itself
            writes[test] = None
    canon_files = sorted({as_node_path(p) for p in stored} | set(writes)) if code_files is not None else None
    arriving = frozenset(target for target, text in writes.items() if text is not None and (
        target.startswith(f"{TESTS_DIR}/") and (target.endswith(".py") or runner_of(target) is not None)
        or target.startswith(f"{SEALED_DIR}/")))
    sealed = frozenset(path for path in stored | set(writes) if path.startswith(f"{SEALED_DIR}/") and writes.get(path, "")
                       is not None)
    found = reconcile(proposed, previous=previous, replaced=parsed, test_sources=test_sources,
                      code_files=code_files or [], canon_files=canon_files, arriving_tests=arriving, sealed_files=sealed)
    if found or broken_tests:
        return Review(change, tuple(broken_tests + [locate(str(problem), change) for problem in found]))
    flagged = semantic(proposed) if semantic is not None and parsed else []
    if flagged:
        return Review(change, tuple(locate(problem, change) for problem in flagged))
    new = {req.id: req for doc in proposed for req in doc.requirements}
    changes = _diff_ids(previous, new)
    writes = _placed(writes, proposed, stored, store)
    tests = sorted(target for target in writes if target.startswith(f"{TESTS_DIR}/"))  # written or deleted
    if tests:
        changes["tests"] = tests
    held = _held_back_owners(writes, [*proposed, *current_docs])
    if held:
        changes["held_back"] = held  # by requirement, never by file: the journal and canon's log are build's to read
    sealed_owners = sorted({req.id for doc in proposed for req in doc.requirements if set(req.sealed) & set(writes)})
    if sealed_owners:
        changes["sealed"] = sealed_owners
    return Review(change, writes=writes, changes=changes, documents=tuple(proposed))


def stored_text(store: CanonStore, node_path: str) -> str | None:
    """What canon holds now at a draft's target; a test file's text wherever it is stored, visible or held back."""
    if store.head() is None:
        return None
    text = store.read("HEAD", node_path)
    if text is None and node_path.startswith(f"{TESTS_DIR}/"):
        text = store.read("HEAD", held_back_path(node_path))
    return text


def _placed(writes: dict[str, str | None], proposed: list[Document], stored: set[str],
            store: CanonStore) -> dict[str, str | None]:
    """The change's writes at their places in canon: a test file that a requirement names under held_back: is stored
    in held_back/ (which build never exports), any other under tests/; a file that changes side moves."""
    held = {node.partition("::")[0] for doc in proposed for req in doc.requirements for node in req.held_back}
    placed: dict[str, str | None] = {}
    for target, text in writes.items():
        if not target.startswith(f"{TESTS_DIR}/"):
            placed[target] = text
            continue
        here, there = (held_back_path(target), target) if target in held else (target, held_back_path(target))
        if text is None:
            placed.update({where: None for where in (here, there) if where in stored})
            continue
        placed[here] = text
        if there in stored:
            placed[there] = None
    for path in sorted(stored):  # a stored test whose requirement moved it between tests: and held_back:
        node = as_node_path(path)
        if not node.startswith(f"{TESTS_DIR}/") or node in writes:
            continue
        if (node in held) != path.startswith(f"{HELD_BACK_DIR}/"):
            placed[held_back_path(node) if node in held else node] = store.read("HEAD", path)
            placed[path] = None
    return placed


def _held_back_owners(writes: dict[str, str | None], documents: list[Document]) -> list[str]:
    """The requirements whose held-back tests the writes add, change or remove."""
    files = {as_node_path(path) for path in writes if path.startswith(f"{HELD_BACK_DIR}/")}
    return sorted({req.id for doc in documents for req in doc.requirements
                   if files & {node.partition("::")[0] for node in req.held_back}})


def locate(problem: str, change: Sequence[Draft]) -> str:
    """Name the draft's own file where the problem is in it, so a person knows which file to open."""
    for draft in change:
        if problem.startswith(draft.target + ":") and draft.name != draft.target:
            return draft.name + problem[len(draft.target):]
    return problem


def recorded_names(verdict: Review, store: CanonStore) -> tuple[str, ...]:
    """The drafts' names as canon's log, spec's journal and what spec-loop prints keep them: a held-back test is
    "a held-back test", never its file (build reads those records)."""
    documents = [*verdict.documents, *store.load_documents()]
    held = {node.partition("::")[0] for doc in documents for req in doc.requirements for node in req.held_back}
    return tuple("a held-back test" if draft.target in held else draft.name for draft in verdict.drafts)
