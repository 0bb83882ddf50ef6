"""Canon documents: good ones parse; bad ones are refused with file:line and the reason; junk never crashes."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from canon.parser import CanonSyntaxError, parse_document, render_requirement
from shared.errors import CanonError

GOOD = """---
area: billing
title: Billing
---

# Billing

## BILL-1: invoices add up
priority: 1
paths: src/billing/**, tests/test_billing.py
checks:
  - python -m pytest -q tests/test_billing.py
  - test -f src/billing/__init__.py
depends_on: BILL-2

Every invoice's total equals the sum of its lines.

## BILL-2: lines have prices
tests: tests/test_lines.py::test_price

Each line has a price in cents.
"""


def test_a_good_document_parses() -> None:
    doc = parse_document(GOOD, "requirements/billing.md")
    assert doc.area == "billing" and doc.title == "Billing"
    first, second = doc.requirements
    assert first.id == "BILL-1" and first.priority == 1
    assert first.paths == ("src/billing/**", "tests/test_billing.py")
    assert first.checks == ("python -m pytest -q tests/test_billing.py", "test -f src/billing/__init__.py")
    assert first.depends_on == ("BILL-2",)
    assert first.text == "Every invoice's total equals the sum of its lines."
    assert str(first.source) == "requirements/billing.md:8"
    assert second.priority == 3 and second.tests == ("tests/test_lines.py::test_price",)


def test_each_check_knows_its_line() -> None:
    first = parse_document(GOOD, "requirements/billing.md").requirements[0]
    assert [first.source.of_check(i) for i in range(2)] == ["requirements/billing.md:12", "requirements/billing.md:13"]
    inline = parse_document("## A-1: t\npriority: 1\nchecks: true\n\ntext\n", "r.md").requirements[0]
    assert inline.source.of_check(0) == "r.md:3"


def test_render_round_trips() -> None:
    doc = parse_document(GOOD, "r.md")
    text = "\n".join(render_requirement(r) for r in doc.requirements)
    again = parse_document(text, "r.md")
    assert [r.model_dump(exclude={"source", "area"}) for r in again.requirements] == \
        [r.model_dump(exclude={"source", "area"}) for r in doc.requirements]


def test_a_markdown_rule_in_prose_is_not_a_header() -> None:
    doc = parse_document("## A-1: t\n\ntext\n\n---\n\nmore text\n", "requirements/rule.md")
    assert "more text" in doc.requirements[0].text


@pytest.mark.parametrize(("text", "line", "words"), [
    (b"", 1, "empty"),
    (b"\x00\x01\x02binary", 1, "NUL byte"),
    (b"\xff\xfe not utf-8", 1, "not UTF-8"),
    (b"---\narea: x\n\n## A-1: t\n\ntext\n", 1, "never closed"),
    (b"just prose, no requirement\n", 1, "no requirement found"),
    (b"## A-1: t\npriority: high\n\ntext\n", 2, "whole number"),
    (b"## A-1: t\npriority: 12\n\ntext\n", 2, "less than or equal to 9"),
    (b"## A-1: t\ncolour: red\n\ntext\n", 2, "unknown field 'colour'"),
    (b"## A-1: t\npaths: /etc/passwd\n\ntext\n", 2, "relative path"),
    (b"## A-1: t\npaths: ../outside\n\ntext\n", 2, "without '..'"),
    (b"## lowercase-1: t\n\ntext\n", 1, "not a requirement id"),
    (b"## A-1: t\npriority: 1\n", 1, "has no text"),
    (b"##A-1: t\n\ntext\n", 1, "space after '##'"),
    (b"## A-1: t\npriority: 1\npriority: 2\n\ntext\n", 3, "given twice"),
    (b"## A-1: t\ntests: test_x.py\n\ntext\n", 2, "under canon's tests/"),
    (b"---\narea: x\n---\n\n## A-1: t\n\ntext\n\n---\narea: y\n---\n\n## A-2: u\n\nmore\n", 9, "a second header"),
])
def test_bad_documents_name_file_line_and_reason(text: bytes, line: int, words: str) -> None:
    with pytest.raises(CanonSyntaxError) as caught:
        parse_document(text, "requirements/bad.md")
    assert caught.value.file == "requirements/bad.md"
    assert caught.value.line == line, str(caught.value)
    assert words in caught.value.reason
    assert str(caught.value).startswith(f"requirements/bad.md:{line}: ")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_junk_bytes_are_refused_never_crash(raw: bytes) -> None:
    try:
        parse_document(raw, "junk.md")
    except CanonError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([
    "---", "area: a", "## A-1: t", "## B-2: u", "priority: 1", "priority: x", "paths: a/**", "checks:", "  - true",
    "depends_on: A-1", "tests: tests/t.py", "text", "", "##", "## x", "conflicts_with: B-2", "reads: *.py", "unknown: 1",
]), max_size=30))
def test_shuffled_document_lines_are_parsed_or_refused(lines: list[str]) -> None:
    try:
        doc = parse_document("\n".join(lines), "shuffled.md")
    except CanonError as exc:
        assert str(exc).startswith("shuffled.md:")
    else:
        assert doc.requirements


@pytest.mark.parametrize("where", ["after the text", "after a blank line"])
def test_a_field_in_the_text_is_refused_where_it_stands(where: str) -> None:
    """Written after the text (or below a blank line), `paths:` and `tests:` were read as prose: the requirement
    landed unmeasured and its test unnamed. Now the line is named, with where fields go."""
    fields = "paths: src/humanize/filesize.py\ntests: tests/test_size.py\n"
    body = ("Formats file sizes.\n" + fields) if where == "after the text" else ("\n" + fields + "\nFormats file sizes.\n")
    document = "## HUM-1: natural sizes\npriority: 2\n" + ("\n" if where == "after the text" else "") + body
    with pytest.raises(CanonSyntaxError) as caught:
        parse_document(document, "requirements/humanize.md")
    assert caught.value.line == (5 if where == "after the text" else 4)
    assert "'paths:' stands in HUM-1's text" in caught.value.reason
    assert "fields go right under the heading '## HUM-1: natural sizes'" in caught.value.reason


def test_every_problem_of_a_document_is_named_at_once() -> None:
    """Issue 43: the problems of one document came one a save (line 10 first, line 7 only after that fix); now every
    one is named, in line order, and the document stays refused until all are fixed."""
    document = ("## A-1: first\npriority: high\ncolour: red\n\ntext\n\n## A-2: second\npaths: /etc/passwd\n\n"
                "text\n\n## a-3: third\n\ntext\n\n## A-4: fourth\npriority: 1\n\nmore text\ntests: tests/test_x.py\n")
    with pytest.raises(CanonSyntaxError) as caught:
        parse_document(document, "requirements/many.md")
    lines = [line for line, _ in caught.value.problems]
    assert lines == [2, 3, 8, 12, 20], caught.value.problems
    assert (caught.value.line, caught.value.file) == (2, "requirements/many.md")
    said = str(caught.value).splitlines()
    assert [line.split(":")[1] for line in said] == ["2", "3", "8", "12", "20"]
    assert "whole number" in said[0] and "unknown field 'colour'" in said[1] and "relative path" in said[2]
    assert "not a requirement id" in said[3] and "'tests:' stands in A-4's text" in said[4]
