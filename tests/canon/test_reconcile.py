"""Reconcile: every problem a canon can have before it is committed, by requirement and file:line."""
from __future__ import annotations

from canon.parser import parse_document
from canon.reconcile import reconcile


def doc(text: str, path: str = "requirements/a.md"):  # type: ignore[no-untyped-def]
    return parse_document(text, path)


def problems(*docs, previous=None, replaced=None, tests=None, code=()):  # type: ignore[no-untyped-def]
    return [str(p) for p in reconcile(list(docs), previous=previous or {}, replaced=replaced or {},
                                      test_sources=tests or {}, code_files=list(code))]


def test_duplicate_ids_across_documents() -> None:
    a = doc("## A-1: one\n\ntext\n")
    b = doc("\n\n## A-1: again\n\ntext\n", "requirements/b.md")
    assert problems(a, b) == ["requirements/b.md:3: A-1: duplicate id; it is already defined at requirements/a.md:1"]


def test_dangling_dependency() -> None:
    assert problems(doc("## A-1: one\ndepends_on: A-9\n\ntext\n")) == [
        "requirements/a.md:1: A-1: depends_on names A-9, which no canon document defines"]


def test_dependency_cycle() -> None:
    found = problems(doc("## A-1: one\ndepends_on: A-2\n\nt\n\n## A-2: two\ndepends_on: A-3\n\nt\n\n## A-3: three\ndepends_on: A-1\n\nt\n"))
    assert found == ["requirements/a.md:1: A-1: dependency cycle: A-1 -> A-2 -> A-3 -> A-1"]


def test_declared_conflict_with_overlapping_scope() -> None:
    found = problems(doc("## A-1: tabs\npaths: src/**\nconflicts_with: A-2\n\nt\n\n## A-2: spaces\npaths: src/fmt.py\n\nt\n"))
    assert len(found) == 1 and "declared mutually exclusive with A-2" in found[0] and "src/fmt.py" in found[0]
    assert problems(doc("## A-1: tabs\npaths: src/a.py\nconflicts_with: A-2\n\nt\n\n## A-2: spaces\npaths: src/b.py\n\nt\n")) == []


def test_checks_naming_missing_conformance_tests() -> None:
    d = doc("## A-1: one\ntests: tests/test_a.py::test_x, tests/test_b.py\n\nt\n")
    found = problems(d, tests={"tests/test_a.py": "def test_y():\n    pass\n"})
    assert "requirements/a.md:1: A-1: tests names tests/test_a.py::test_x, but tests/test_a.py defines no test_x" in found
    assert "requirements/a.md:1: A-1: tests names tests/test_b.py, which is not among canon's conformance tests" in found


def test_a_draft_may_not_silently_remove_requirements() -> None:
    old = doc("## A-1: one\n\nt\n\n## A-2: two\n\nt\n")
    previous = {r.id: r for r in old.requirements}
    draft = doc("## A-1: one\n\nt\n")
    assert problems(draft, previous=previous, replaced={"requirements/a.md": draft}) == [
        "requirements/a.md:1: this draft would remove A-2 without saying so; keep them, or list them in the header as 'removes: A-2'"]
    declared = doc("---\nremoves: A-2\n---\n## A-1: one\n\nt\n")
    assert problems(declared, previous=previous, replaced={"requirements/a.md": declared}) == []
