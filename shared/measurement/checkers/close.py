"""Numbers within the case's tolerance (absolute, or relative to the expected value, whichever is larger), in lists and
objects too; an integer may stand for a number with a fraction here, and the other way round."""
from __future__ import annotations

import math
from typing import Any

from shared.measurement.checkers.equal import differs as equal


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def differs(expected: Any, claimed: Any, case: Any = None) -> str:
    tolerance = getattr(case, "tolerance", 1e-9)
    if _number(expected) and _number(claimed):
        if math.isfinite(claimed) and abs(claimed - expected) <= max(tolerance, tolerance * abs(expected)):
            return ""
        return f"{claimed!r} where {expected!r} (within {tolerance:g}) was expected"
    if isinstance(expected, list) and isinstance(claimed, list) and len(expected) == len(claimed):
        return next((f"item {index}: {why}" for index, (a, b) in enumerate(zip(expected, claimed, strict=True))
                     if (why := differs(a, b, case))), "")
    if isinstance(expected, dict) and isinstance(claimed, dict) and expected.keys() == claimed.keys():
        return next((f"key {key!r}: {why}" for key in expected if (why := differs(expected[key], claimed[key], case))), "")
    return equal(expected, claimed)
