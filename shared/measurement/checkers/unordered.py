"""A list as a multiset: the same items, each as often, in any order (items compared by JSON-typed equality)."""
from __future__ import annotations

from typing import Any

from shared.measurement.checkers.equal import differs as equal


def differs(expected: Any, claimed: Any, case: object = None) -> str:
    if not isinstance(expected, list) or not isinstance(claimed, list):
        return equal(expected, claimed)
    left = list(claimed)
    for item in expected:
        match = next((index for index, other in enumerate(left) if not equal(item, other)), None)
        if match is None:
            return f"{item!r} is missing (in any order)"
        left.pop(match)
    return f"{left[0]!r} is not expected" if left else ""
