"""Reconcile: every problem a canon can have before it is committed, by requirement and file:line."""
from __future__ import annotations

from canon.parser import parse_document
from canon.reconcile import reconcile


def doc(text: str, path: str = "requirements/a.md"):  # type: ignore[no-untyped-def]
    return parse_document(text, path)


def problems(*docs, previous=None, replaced=None, tests=None, code=(), canon=None):  # type: ignore[no-untyped-def]
    return [str(p) for p in reconcile(list(docs), previous=previous or {}, replaced=replaced or {},
                                      test_sources=tests or {}, code_files=list(code), canon_files=canon)]


def test_duplicate_ids_across_documents() -> None:
    a = doc("## A-1: one\n\ntext\n")
    b = doc("\n\n## A-1: again\n\ntext\n", "requirements/b.md")
    assert problems(a, b) == ["requirements/b.md:3: A-1: duplicate id; it is already defined at requirements/a.md:1. "
                              "Give this one a new id, or change the requirement where it is defined"]


def test_dangling_dependency() -> None:
    assert problems(doc("## A-1: one\ndepends_on: A-9\n\ntext\n")) == [
        "requirements/a.md:1: A-1: depends_on names A-9, which no canon document defines; "
        "add A-9 in the same change, or drop it from depends_on"]


def test_dependency_cycle() -> None:
    found = problems(doc("## A-1: one\ndepends_on: A-2\n\nt\n\n## A-2: two\ndepends_on: A-3\n\nt\n\n"
                         "## A-3: three\ndepends_on: A-1\n\nt\n"))
    assert found == ["requirements/a.md:1: A-1: dependency cycle: A-1 -> A-2 -> A-3 -> A-1; drop one of these depends_on"]


def test_declared_conflict_with_overlapping_scope() -> None:
    found = problems(doc("## A-1: tabs\npaths: src/**\nconflicts_with: A-2\n\nt\n\n## A-2: spaces\npaths: src/fmt.py\n\nt\n"))
    assert len(found) == 1 and "declared mutually exclusive with A-2" in found[0] and "src/fmt.py" in found[0]
    apart = "## A-1: tabs\npaths: src/a.py\nconflicts_with: A-2\n\nt\n\n## A-2: spaces\npaths: src/b.py\n\nt\n"
    assert problems(doc(apart)) == []


def test_checks_naming_missing_conformance_tests() -> None:
    d = doc("## A-1: one\ntests: tests/test_a.py::test_x, tests/test_b.py\n\nt\n")
    found = problems(d, tests={"tests/test_a.py": "def test_y():\n    pass\n"})
    assert ("requirements/a.md:1: A-1: tests names tests/test_a.py::test_x, but tests/test_a.py defines no test_x; "
            "correct the name, or add test_x to tests/test_a.py (put test_a.py in the inbox together with a.md "
            "(both land as one canon version), or run: spec-loop add a.md test_a.py)") in found
    assert ("requirements/a.md:1: A-1: tests names tests/test_b.py, which is not among canon's conformance tests; "
            "put test_b.py in the inbox together with a.md (both land as one canon version), "
            "or run: spec-loop add a.md test_b.py") in found


def test_a_test_in_a_subfolder_is_added_by_its_canon_path() -> None:
    found = problems(doc("## A-1: one\ntests: tests/unit/test_a.py\n\nt\n"))
    assert found == ["requirements/a.md:1: A-1: tests names tests/unit/test_a.py, which is not among canon's conformance "
                     "tests; run: spec-loop add a.md tests/unit/test_a.py (from a folder holding tests/unit/test_a.py; "
                     "both land as one canon version)"]


CHECKED = """## A-1: one
paths: src/a.py
checks:
  - python -m pytest -q tests/test_a.py
  - python scripts/check.py src/a.py

t
"""


def test_a_check_naming_a_file_nowhere_is_refused_at_its_line() -> None:
    found = problems(doc(CHECKED), code=["src/b.py", "scripts/other.py"], canon=["requirements/a.md"])
    assert found == [
        "requirements/a.md:4: A-1: checks names tests/test_a.py, which is neither in the code (at its current commit) "
        "nor among canon's files; add it to the code, or make it a conformance test (put it in the inbox together "
        "with a.md and name it under 'tests:'), or correct the path",
        "requirements/a.md:5: A-1: checks names scripts/check.py, which is neither in the code (at its current commit) "
        "nor among canon's files; add it to the code, or make it a conformance test (put it in the inbox together "
        "with a.md and name it under 'tests:'), or correct the path",
    ]  # src/a.py is missing too, but the requirement's paths let the agent create it


def test_a_check_naming_files_the_code_has_is_accepted() -> None:
    assert problems(doc(CHECKED), code=["tests/test_a.py", "scripts/check.py"], canon=[]) == []
    folder = doc("## A-1: one\nchecks: python -m pytest -q tests/\n\nt\n")
    assert problems(folder, code=["tests/unit/test_x.py"], canon=[]) == []


def test_a_check_naming_a_canon_test_is_told_to_use_tests() -> None:
    found = problems(doc("## A-1: one\nchecks: python -m pytest tests/test_a.py\n\nt\n"), code=[],
                     canon=["tests/test_a.py"])
    assert found == ["requirements/a.md:2: A-1: checks names tests/test_a.py, which is one of canon's conformance tests, "
                     "but checks run in the code, where there is no tests/test_a.py; name it under 'tests:' instead "
                     "(tests: tests/test_a.py)"]


def test_only_new_and_changed_checks_are_looked_up() -> None:
    old = doc(CHECKED)
    previous = {r.id: r for r in old.requirements}
    assert problems(doc(CHECKED), previous=previous, code=[], canon=[]) == []  # the code moved on: not this change's doing
    changed = doc(CHECKED.replace("src/a.py\n", "src/a.py, src/b.py\n", 1))
    assert len(problems(changed, previous=previous, code=[], canon=[])) == 2
    assert problems(doc(CHECKED), code=[]) == []  # no canon_files: the look-up is left out


def test_a_draft_may_not_silently_remove_requirements() -> None:
    old = doc("## A-1: one\n\nt\n\n## A-2: two\n\nt\n")
    previous = {r.id: r for r in old.requirements}
    draft = doc("## A-1: one\n\nt\n")
    assert problems(draft, previous=previous, replaced={"requirements/a.md": draft}) == [
        "requirements/a.md:1: this draft would remove A-2 without saying so; keep them, or list them in the header as "
        "'removes: A-2'"]
    declared = doc("---\nremoves: A-2\n---\n## A-1: one\n\nt\n")
    assert problems(declared, previous=previous, replaced={"requirements/a.md": declared}) == []
