"""JSON-typed equality: the same type and the same value all the way down (1, 1.0 and true are three answers)."""
from __future__ import annotations

from typing import Any


def _kind(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number with a fraction", str: "a string", list: "a list",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)


def differs(expected: Any, claimed: Any, case: object = None) -> str:
    if type(expected) is not type(claimed):
        return f"{_kind(claimed)} ({claimed!r}) where {_kind(expected)} ({expected!r}) was expected"
    if isinstance(expected, list):
        if len(expected) != len(claimed):
            return f"a list of {len(claimed)} where {len(expected)} were expected"
        return next((f"item {index}: {why}" for index, (a, b) in enumerate(zip(expected, claimed, strict=True))
                     if (why := differs(a, b))), "")
    if isinstance(expected, dict):
        if expected.keys() != claimed.keys():
            return f"keys {sorted(claimed)} where {sorted(expected)} were expected"
        return next((f"key {key!r}: {why}" for key in expected if (why := differs(expected[key], claimed[key]))), "")
    return "" if expected == claimed else f"{claimed!r} where {expected!r} was expected"
