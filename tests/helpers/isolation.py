"""What the machine running the tests can confine, asked once per session."""
from __future__ import annotations

import functools


@functools.cache
def view_unavailable() -> str:
    """Why no program gets its own view here ('' when it does): a real probe (shared/isolation/view.py)."""
    from shared.isolation.view import probe

    return probe()
