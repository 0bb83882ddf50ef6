"""Canon documents: a human-editable Markdown dialect, parsed with line numbers for every error.

    ---
    area: text
    title: Text utilities
    ---

    ## TK-1: slugify makes URL slugs
    priority: 1
    paths: textkit/slug.py
    tests: tests/test_slug.py
    held_back: tests/test_slug_edges.py
    sealed: sealed/slug.json
    depends_on: TK-0

    What the requirement says, in prose, until the next '## ' heading.

The header between '---' lines is optional. Field lines follow a requirement's heading up to the
first blank line. A list field takes comma-separated values inline (one command for `checks`), or
one '- item' per following line.
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath

from pydantic import ValidationError

from canon.model import Document, Requirement, SourceRef
from shared.errors import CanonError

HEADING = re.compile(r"^##\s+(?P<id>\S+?):?\s+(?P<title>.*\S)\s*$")
FIELD = re.compile(r"^(?P<key>[a-z_]+):\s*(?P<value>.*?)\s*$")
LIST_ITEM = re.compile(r"^\s+-\s+(?P<value>.*?)\s*$")
LIST_FIELDS = {"paths", "checks", "tests", "held_back", "sealed", "reads", "depends_on", "conflicts_with", "allows"}
SCALAR_FIELDS = {"priority", "network"}
HEADER_FIELDS = {"area", "title", "removes", "requires"}


class CanonSyntaxError(CanonError):
    """Every problem found in one document, in line order: a person fixes them in one round, not one a save. `line`
    and `reason` are the first's."""

    def __init__(self, file: str, line: int, message: str, more: tuple[tuple[int, str], ...] = ()) -> None:
        self.file = file
        self.problems = tuple(sorted({(line, message), *more}))
        self.line, self.reason = self.problems[0]
        super().__init__("\n".join(f"{file}:{at}: {reason}" for at, reason in self.problems))


class _Problems:
    """The problems of one document as they are found; raised together at the end."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.found: list[tuple[int, str]] = []

    def add(self, line: int, message: str) -> None:
        self.found.append((line, message))

    def raise_any(self) -> None:
        if self.found:
            (line, message), *more = self.found
            raise CanonSyntaxError(self.file, line, message, tuple(more))


def _decode(raw: bytes, file: str) -> str:
    if b"\0" in raw:
        line = raw[: raw.index(b"\0")].count(b"\n") + 1
        raise CanonSyntaxError(file, line, "contains a NUL byte: this looks like a binary file, not a canon document")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise CanonSyntaxError(file, line, f"not UTF-8 text (bad byte at offset {exc.start}); save it as UTF-8") from None


def _split_list(key: str, value: str) -> list[str]:
    if key == "checks":
        return [value] if value else []
    return [part.strip() for part in value.split(",") if part.strip()]


def _header(lines: list[str], file: str, problems: _Problems) -> tuple[dict[str, str], int]:
    """Front matter between '---' lines; returns the fields and the index of the first body line."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise CanonSyntaxError(file, 1, "the header opened with '---' is never closed; add a line '---' after its fields")
    fields: dict[str, str] = {}
    for index in range(1, end):
        text = lines[index]
        if not text.strip():
            continue
        match = FIELD.match(text)
        if not match:
            problems.add(index + 1, f"header line is not 'key: value': {text.strip()!r}")
            continue
        key = match["key"]
        if key not in HEADER_FIELDS:
            problems.add(index + 1, f"unknown header key '{key}'; known keys: {', '.join(sorted(HEADER_FIELDS))}")
            continue
        fields[key] = match["value"]
    return fields, end + 1


def _opens_header(lines: list[str], index: int) -> bool:
    """A '---' line followed by a header field and a closing '---': front matter pasted into the body (a lone '---'
    in prose is a Markdown rule, and stays prose)."""
    following = next((line for line in lines[index + 1:] if line.strip()), "")
    match = FIELD.match(following)
    return bool(match and match["key"] in HEADER_FIELDS and any(line.strip() == "---" for line in lines[index + 2:]))


def parse_document(raw: bytes | str, file: str) -> Document:
    """The document's requirements; or a CanonSyntaxError naming every problem found in it, each at its line."""
    text = raw if isinstance(raw, str) else _decode(raw, file)
    if not text.strip():
        raise CanonSyntaxError(file, 1, "the document is empty; it needs at least one requirement ('## ID: title')")
    problems = _Problems(file)
    lines = text.splitlines()
    header, start = _header(lines, file, problems)
    area = header.get("area") or PurePosixPath(file).stem
    blocks: list[tuple[int, re.Match[str]]] = []
    for index in range(start, len(lines)):
        if lines[index].strip() == "---" and _opens_header(lines, index):
            problems.add(index + 1, "a second header ('---' and header fields) inside the document: a document has one "
                         "header, at its top. Add requirements to it as '## ID: title' blocks, or save the other document "
                         "under a name of its own")
        if lines[index].startswith("## "):
            match = HEADING.match(lines[index])
            if not match:
                problems.add(index + 1, "a requirement heading must read '## ID: title'")
                continue
            blocks.append((index, match))
        elif lines[index].startswith("##") and not lines[index].startswith("###"):
            problems.add(index + 1, "a requirement heading must read '## ID: title' (space after '##')")
    if not blocks and not header.get("removes") and not problems.found:  # a header with removes: alone is a removal
        problems.add(start + 1, "no requirement found; start one with a line '## ID: title' (or, to remove "
                     "requirements, give a header with 'removes: ID, ...')")
    requirements = []
    for number, (index, match) in enumerate(blocks):
        end = blocks[number + 1][0] if number + 1 < len(blocks) else len(lines)
        requirement = _requirement(lines, index, end, match, area, problems)
        if requirement is not None:
            requirements.append(requirement)
    problems.raise_any()
    removes = tuple(_split_list("removes", header.get("removes", "")))
    requires = tuple(_split_list("requires", header.get("requires", "")))
    unknown = [value for value in requires if value != "sealed"]
    if unknown:
        line = next(i + 1 for i, text in enumerate(lines) if text.startswith("requires:"))
        raise CanonSyntaxError(file, line, f"requires: {', '.join(unknown)} is not known; 'requires: sealed' makes every "
                               "requirement of the document need sealed cases before it is certified")
    return Document(path=file, area=area, title=header.get("title", area), removes=removes, requires=requires,
                    requirements=tuple(requirements))


def _requirement(lines: list[str], index: int, end: int, heading: re.Match[str], area: str,
                 problems: _Problems) -> Requirement | None:
    """One requirement block; None when it has problems (each added to `problems`)."""
    had = len(problems.found)
    fields: dict[str, object] = {}
    cursor = index + 1
    current_list: str | None = None
    field_lines: dict[str, int] = {}
    check_lines: list[int] = []
    while cursor < end and lines[cursor].strip():
        line = lines[cursor]
        item = LIST_ITEM.match(line)
        if item and current_list:
            fields[current_list].append(item["value"])  # type: ignore[attr-defined]
            if current_list == "checks":
                check_lines.append(cursor + 1)
        else:
            match = FIELD.match(line)
            if not match:
                break  # prose directly under the heading: the field block is over
            key, value = match["key"], match["value"]
            current_list = None
            if key not in LIST_FIELDS | SCALAR_FIELDS:
                known = ", ".join(sorted(LIST_FIELDS | SCALAR_FIELDS))
                problems.add(cursor + 1, f"unknown field '{key}'; known fields: {known}")
            elif key in fields:
                problems.add(cursor + 1, f"field '{key}' is given twice in {heading['id']}")
            else:
                field_lines[key] = cursor + 1
                if key in LIST_FIELDS:
                    fields[key] = _split_list(key, value)
                    current_list = key if not value else None
                    if key == "checks" and value:
                        check_lines.append(cursor + 1)
                else:
                    fields[key] = value
        cursor += 1
    for offset, line in enumerate(lines[cursor:end]):
        misplaced = FIELD.match(line)
        if misplaced and misplaced["key"] in LIST_FIELDS | SCALAR_FIELDS:
            problems.add(cursor + offset + 1, (
                f"'{misplaced['key']}:' stands in {heading['id']}'s text, where it is read as prose and measures nothing; "
                f"fields go right under the heading '## {heading['id']}: {heading['title']}', with no blank line "
                "between them and it"))
    body = "\n".join(lines[cursor:end]).strip()
    if not body:
        problems.add(index + 1, f"{heading['id']} has no text; say what must hold, in prose, below its fields")
    data = {**fields, "id": heading["id"], "title": heading["title"], "text": body or "-", "area": area,
            "source": SourceRef(file=problems.file, line=index + 1, check_lines=tuple(check_lines))}
    if "priority" in data:
        try:
            data["priority"] = int(str(data["priority"]))
        except ValueError:
            problems.add(field_lines["priority"], "priority must be a whole number from 1 (most important) to 9")
            del data["priority"]
    try:
        requirement = Requirement.model_validate(data)
    except ValidationError as exc:
        for problem in exc.errors():
            key = str(problem["loc"][0]) if problem["loc"] else ""
            at = field_lines.get(key, index + 1)
            message = problem["msg"].removeprefix("Value error, ")
            problems.add(at, f"{heading['id']}: {key}: {message}" if key else message)
        return None
    return requirement if len(problems.found) == had else None


def render_requirement(req: Requirement) -> str:
    """The canonical text of one requirement, as parse_document reads it back."""
    lines = [f"## {req.id}: {req.title}", f"priority: {req.priority}"] + (["network: open"] if req.network == "open" else [])
    for key in ("paths", "tests", "held_back", "sealed", "reads", "depends_on", "conflicts_with", "allows"):
        values = getattr(req, key)
        if values:
            lines.append(f"{key}: {', '.join(values)}")
    if req.checks:
        lines.append("checks:")
        lines.extend(f"  - {command}" for command in req.checks)
    return "\n".join(lines) + "\n\n" + req.text.strip() + "\n"
