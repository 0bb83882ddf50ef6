"""An exception whose class, or one of its bases, has the expected name ("ValueError" passes a subclass of it);
a dotted name must match a class's module and name."""
from __future__ import annotations

from typing import Any


def differs(expected: str, claimed: dict[str, Any]) -> str:
    names = claimed.get("raises")
    if not isinstance(names, list):
        return f"returned {claimed.get('returns')!r} where it should raise {expected}"
    if expected in names or any(isinstance(name, str) and name.rsplit(".", 1)[-1] == expected for name in names):
        return ""
    return f"raised {names[0] if names else 'an exception'} where {expected} was expected"
