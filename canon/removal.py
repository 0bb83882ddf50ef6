"""Taking requirements out of canon: a document's `removes:` header names requirements to remove wherever they are.

A draft that replaces a document may drop its own requirements by listing them (reconcile refuses a silent drop);
`removes:` may also name requirements of documents the change does not touch, which are then rewritten without them,
and a draft that holds nothing but a header with `removes:` is a removal alone. A document left with no requirement
is deleted, and so is a conformance test file that no remaining requirement names.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from canon.model import Document
from canon.parser import HEADING, parse_document


@dataclass
class Removal:
    documents: dict[str, Document | None] = field(default_factory=dict)  # rewritten documents; None: deleted
    writes: dict[str, str | None] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def without(text: str, ids: set[str]) -> str:
    """The document's text with the requirements `ids` taken out, each from its heading to the next heading."""
    kept: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        heading = HEADING.match(line.rstrip("\n")) if line.startswith("## ") else None
        if heading is not None:
            skipping = heading["id"] in ids
        if not skipping:
            kept.append(line)
    return "".join(kept).rstrip("\n") + "\n"


def remove_elsewhere(current: list[Document], parsed: dict[str, Document], read: Callable[[str], str | None]) -> Removal:
    """What the drafts' `removes:` take out of documents the change does not replace. parsed: the change's documents
    by path; read: a document's present text."""
    found = Removal()
    holders = {req.id: doc for doc in current for req in doc.requirements}
    arriving = {req.id for doc in parsed.values() for req in doc.requirements}
    taken: dict[str, set[str]] = {}
    for path, draft in sorted(parsed.items()):
        for rid in draft.removes:
            holder = holders.get(rid)
            if holder is None:
                if rid not in arriving:
                    found.problems.append(f"{path}:1: removes {rid}, which canon does not have; check the id "
                                          f"(spec-loop status lists them)")
                continue
            if holder.path not in parsed:  # a document the change replaces decides for itself
                taken.setdefault(holder.path, set()).add(rid)
    for path, ids in taken.items():
        text = without(read(path) or "", ids)
        if any(line.startswith("## ") for line in text.splitlines()):
            found.documents[path] = parse_document(text, path)
            found.writes[path] = text
        else:
            found.documents[path] = None
            found.writes[path] = None
    return found


def orphaned_tests(before: list[Document], after: list[Document], test_files: list[str]) -> list[str]:
    """Conformance test files (named as requirements name them, tests/...) a removed requirement named that no
    remaining requirement names."""
    def named(documents: list[Document]) -> set[str]:
        return {node.split("::", 1)[0] for doc in documents for req in doc.requirements
                for node in (*req.tests, *req.held_back, *req.sealed)}

    return sorted((named(before) - named(after)) & set(test_files))
