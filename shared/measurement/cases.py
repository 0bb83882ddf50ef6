"""Sealed cases: a requirement's exam as data, graded outside the room.

A requirement names a file of cases in canon (`sealed: sealed/slug.json`). A case gives the code an input and keeps
its answer: only the input enters the run; the code's output comes back through the run's report channel (or its own
stdout, for a command), and the measuring process compares it there with the expected value, which never entered
the run's process or its file system. A forged report can only claim outputs, so passing a sealed case means
computing the right answer for an input the agent never saw.

    {
      "call": "textkit.slug.slugify",                 the callable every case below calls, unless a case names its own
      "time_limit": 5,                                seconds per case (default 5)
      "cases": [
        {"args": ["Crème brûlée & co."], "returns": "creme-brulee-co"},
        {"call": "textkit.truncate.truncate", "args": ["abc", 0], "raises": "ValueError"},
        {"args": [2], "kwargs": {"digits": 3}, "returns": 1.414, "compare": "close", "tolerance": 0.001},
        {"args": ["b a"], "returns": ["a", "b"], "compare": "unordered"},
        {"run": ["python", "-m", "textkit", "count", "a b c"], "stdin": "", "stdout": "3\n", "exit": 0}
      ]
    }

A call case calls a module-level callable (dotted path) with JSON arguments and expects a JSON value (`returns`, null
included) or an exception (`raises`: a class name its type or one of its bases has). A run case runs a command in the
code's folder (`python` as its program is the project's interpreter) and expects its standard output and exit code.
Comparison rules: shared/measurement/checkers/. docs/canon.md has the whole format.
"""
from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shared.errors import CanonError

DEFAULT_TIME_LIMIT = 5.0
SEALED_DIR = "sealed"


class CasesError(CanonError):
    """A file of sealed cases that does not parse or validate."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CallCase(_Frozen):
    call: str | None = Field(None, pattern=r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+$",
                             description="module.callable (dotted); the file's `call` when left out")
    args: list[Any] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(default_factory=dict)
    returns: Any = None
    raises: str | None = Field(None, pattern=r"^[A-Za-z_][\w.]*$")
    compare: Literal["equal", "unordered", "close"] = "equal"
    tolerance: float = Field(1e-9, ge=0)
    time_limit: float | None = Field(None, gt=0, le=600)

    @model_validator(mode="after")
    def _one_answer(self) -> CallCase:
        gives = ("returns" in self.model_fields_set) + (self.raises is not None)
        if gives != 1:
            raise ValueError("give exactly one of `returns` (a JSON value, null included) or `raises` (an exception's "
                             "class name)")
        return self


class RunCase(_Frozen):
    run: list[str] = Field(min_length=1, description="the command; `python` as its program is the project's interpreter")
    stdin: str = ""
    stdout: str
    exit: int = 0
    compare: Literal["exact", "lines"] = Field("lines", description="lines: each line's trailing blanks and the last "
                                               "newline do not count")
    time_limit: float | None = Field(None, gt=0, le=600)


Case = CallCase | RunCase


class CasesFile(_Frozen):
    call: str | None = Field(None, pattern=r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+$")
    time_limit: float = Field(DEFAULT_TIME_LIMIT, gt=0, le=600)
    cases: list[CallCase | RunCase] = Field(min_length=1)

    def limit(self, case: Case) -> float:
        return case.time_limit or self.time_limit

    def callable_of(self, case: CallCase) -> str:
        return case.call or self.call or ""


def _case(raw: Any, index: int, file: str) -> Case:
    where = f"{file}: case {index + 1}"
    if not isinstance(raw, dict):
        raise CasesError(f"{where}: a case is an object, such as {{\"args\": [...], \"returns\": ...}}")
    model = RunCase if "run" in raw else CallCase
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problem = exc.errors()[0]
        key = ".".join(str(part) for part in problem["loc"])
        message = problem["msg"].removeprefix("Value error, ")
        raise CasesError(f"{where}: {key + ': ' if key else ''}{message}") from None


def load_cases(text: str, file: str) -> CasesFile:
    """A file of sealed cases, validated; CasesError names the file, the line (for JSON) or the case, and what to fix."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CasesError(f"{file}:{exc.lineno}: not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise CasesError(f"{file}:1: a file of sealed cases is an object with a list `cases` (docs/canon.md shows one)")
    cases = [_case(raw, index, file) for index, raw in enumerate(data["cases"])]
    try:  # the cases are models already (validated one by one above, so that a problem names its case)
        loaded = CasesFile.model_validate({**{k: v for k, v in data.items() if k != "cases"}, "cases": cases})
    except ValidationError as exc:
        problem = exc.errors()[0]
        key = ".".join(str(part) for part in problem["loc"])
        raise CasesError(f"{file}: {key}: {problem['msg']}") from None
    missing = [index + 1 for index, case in enumerate(cases) if isinstance(case, CallCase) and not loaded.callable_of(case)]
    if missing:
        raise CasesError(f"{file}: case {missing[0]}: no `call` in the case or at the top of the file: name the callable, "
                         "such as \"call\": \"textkit.slug.slugify\"")
    return loaded
