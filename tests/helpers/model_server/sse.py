"""Server-sent events as the providers write them, and the pieces a streamed text is cut into."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def sse(data: Any, event: str | None = None, *, line_end: str = "\n") -> bytes:
    """One event: `event: <name>` (Anthropic, OpenAI Responses) or data only (Chat Completions, Gemini)."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}{line_end}" if event else ""
    return f"{head}data: {payload}{line_end}{line_end}".encode()


def chunks(text: str, size: int = 24) -> Iterator[str]:
    """Cut a text into several deltas, so clients must join them as they do for a real model."""
    for start in range(0, len(text), size):
        yield text[start : start + size]
