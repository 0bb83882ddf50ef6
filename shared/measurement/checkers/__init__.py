"""How a sealed case's expected value and what the code claimed are compared: one rule a file, each a function
`differs(expected, claimed, case) -> str` that says why they differ ("" when the case passes). They run in the
measuring process, on data parsed from the run's report (JSON), never on objects the code made: an object can claim
to equal anything.

    equal.py      JSON-typed equality: 1 is not 1.0 and not true; lists in order; objects by keys   (the default)
    unordered.py  a list as a multiset of JSON values
    close.py      numbers within the case's tolerance, in lists and objects too
    raises.py     an exception whose class, or one of its bases, has the expected name
    output.py     a command's standard output (exact, or line by line without trailing blanks) and exit code

What a checker says is for the person who wrote the cases (spec's dry run), never for the agent.
"""
from __future__ import annotations

from typing import Any

from shared.measurement.cases import CallCase, Case, RunCase
from shared.measurement.checkers import close, equal, output, raises, unordered

_VALUE_RULES = {"equal": equal.differs, "unordered": unordered.differs, "close": close.differs}


def judge(case: Case, claimed: dict[str, Any]) -> str:
    """Why the code's claim for this case is not the expected answer, or "" when it is. claimed: the report line of a
    call case ({"returns": value} or {"raises": [names]} or {"unserializable": type}), or for a run case
    {"stdout": text, "exit": code}."""
    if isinstance(case, RunCase):
        return output.differs(case, claimed)
    assert isinstance(case, CallCase)
    if "unserializable" in claimed:
        return f"returned a {claimed['unserializable']}, which has no JSON form"
    if case.raises is not None:
        return raises.differs(case.raises, claimed)
    if "raises" in claimed:
        return f"raised {claimed['raises'][0] if claimed['raises'] else 'an exception'} where a value was expected"
    if "returns" not in claimed:
        return "no answer"
    return _VALUE_RULES[case.compare](case.returns, claimed["returns"], case)
