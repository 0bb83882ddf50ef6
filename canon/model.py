"""Canon's value types."""
from __future__ import annotations

import re
from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ID_PATTERN = re.compile(r"^[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+$")
# What a requirement's pass rests on, strongest first, as status, the certificate, the dashboard and deliver say it
STRENGTHS = {
    "sealed": "sealed cases: the code computed answers it never saw",
    "tests": "in-process tests: code that knows their names or values can forge them",
    "checks": "exit-code checks: the code decides",
    "unmeasured": "unmeasured: nothing checks them",
}


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SourceRef(Frozen):
    file: str
    line: int  # the requirement's heading
    check_lines: tuple[int, ...] = ()  # the line of each of its checks, in order

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    def of_check(self, index: int) -> str:
        """file:line of the requirement's check number index (its heading, where the line is not known)."""
        line = self.check_lines[index] if index < len(self.check_lines) else self.line
        return f"{self.file}:{line}"


def _check_scope_path(value: str) -> str:
    if not value or value.startswith("/") or ".." in value.split("/"):
        raise ValueError(f"'{value}' must be a relative path or glob inside the code repository, without '..'")
    return value


class Requirement(Frozen):
    id: str = Field(description="stable id, such as TK-1")
    title: str
    text: str
    area: str
    priority: int = Field(3, ge=1, le=9, description="1 is the most important")
    paths: tuple[str, ...] = Field((), description="globs the requirement grants as write scope")
    checks: tuple[str, ...] = Field((), description="shell commands; exit 0 means the requirement holds")
    tests: tuple[str, ...] = Field((), description="pytest node ids of canon's conformance tests")
    held_back: tuple[str, ...] = Field((), description="pytest node ids of conformance tests no agent ever sees: only plan "
                                       "runs them, and what it says of them is how many fail")
    sealed: tuple[str, ...] = Field((), description="files of sealed cases in canon (sealed/NAME.json): inputs the code "
                                    "gets and expected answers it never sees, compared outside its process")
    reads: tuple[str, ...] = Field((), description="globs of the code its checks read; narrows the memo key")
    allows: tuple[str, ...] = Field((), description="kinds of the tamper scan (shared/measurement/tamper.py) its files may use")
    network: Literal["none", "open"] = Field("none", description="what its checks reach: none (their own loopback) or "
                                             "open (the machine's network, for a check that must fetch something)")
    depends_on: tuple[str, ...] = ()
    conflicts_with: tuple[str, ...] = ()
    source: SourceRef

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not ID_PATTERN.match(value):
            raise ValueError(f"'{value}' is not a requirement id; use capitals, digits and dashes, such as TK-1")
        return value

    @field_validator("paths", "reads")
    @classmethod
    def _scope(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_check_scope_path(value) for value in values)

    @field_validator("allows")
    @classmethod
    def _allows(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        from shared.measurement.tamper import KINDS

        unknown = [value for value in values if value not in KINDS or value == "unreadable"]
        if unknown:
            known = ", ".join(kind for kind in KINDS if kind != "unreadable")
            raise ValueError(f"{', '.join(map(repr, unknown))} is not a kind of the tamper scan; known kinds: {known}")
        return values

    @field_validator("tests", "held_back")
    @classmethod
    def _tests(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            if not value.startswith("tests/") or ".." in value:
                raise ValueError(f"'{value}' must be a pytest node id under canon's tests/, such as tests/test_x.py::test_y")
        return values

    @field_validator("sealed")
    @classmethod
    def _sealed(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            if not value.startswith("sealed/") or not value.endswith(".json") or ".." in value:
                raise ValueError(f"'{value}' must be a file of sealed cases in canon's sealed/, such as sealed/slug.json")
        return values

    @property
    def measured(self) -> bool:
        return bool(self.checks or self.tests or self.held_back or self.sealed)

    @property
    def strength(self) -> str:
        """What a pass of this requirement rests on, strongest first: 'sealed' (the code had to compute answers it never
        saw), 'tests' (in-process tests: code that knows their names or values can forge them), 'checks' (exit codes:
        the code decides), or 'unmeasured'."""
        return "sealed" if self.sealed else "tests" if self.tests or self.held_back else "checks" if self.checks \
            else "unmeasured"


class Document(Frozen):
    path: str  # relative to canon's root, such as requirements/text.md
    area: str
    title: str
    removes: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()  # what every requirement here needs before it is certified: ("sealed",) or ()
    requirements: tuple[Requirement, ...]


class Canon(Frozen):
    version: int
    commit: str
    documents: tuple[Document, ...]
    test_files: tuple[str, ...] = ()  # conformance test files, relative to canon's root
    held_back_files: tuple[str, ...] = ()  # held-back test files, relative to canon's root (held_back/tests/...)
    sealed_files: tuple[str, ...] = ()  # files of sealed cases, relative to canon's root (sealed/...)

    @cached_property
    def requirements(self) -> dict[str, Requirement]:
        return {req.id: req for doc in self.documents for req in doc.requirements}

    def by_strength(self) -> dict[str, list[str]]:
        """The requirement ids by what their pass rests on (STRENGTHS' keys, in its order; empty tiers left out)."""
        found: dict[str, list[str]] = {tier: [] for tier in STRENGTHS}
        for rid, req in sorted(self.requirements.items()):
            found[req.strength].append(rid)
        return {tier: ids for tier, ids in found.items() if ids}

    def must_be_sealed(self, rid: str) -> bool:
        """Whether the document holding this requirement says `requires: sealed` in its header."""
        return any("sealed" in doc.requires for doc in self.documents if any(r.id == rid for r in doc.requirements))

    def slice(self, ids: tuple[str, ...]) -> list[Requirement]:
        """The requirements named and everything they depend on, transitively: what an agent needs to see."""
        seen: dict[str, Requirement] = {}
        stack = list(ids)
        while stack:
            rid = stack.pop()
            if rid in seen or rid not in self.requirements:
                continue
            seen[rid] = self.requirements[rid]
            stack.extend(seen[rid].depends_on)
        return [seen[rid] for rid in sorted(seen, key=lambda r: (r not in ids, r))]
