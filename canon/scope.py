"""Write-scope globs: '*' stays inside one path segment, '**' crosses segments, a trailing '/' means the folder."""
from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=4096)
def _compile(pattern: str) -> re.Pattern[str]:
    if pattern.endswith("/"):
        pattern += "**"
    out = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return re.compile("".join(out) + r"\Z")


def matches(path: str, patterns: tuple[str, ...] | list[str]) -> bool:
    return any(_compile(pattern).match(path) for pattern in patterns)


def overlap(left: tuple[str, ...], right: tuple[str, ...], known_paths: list[str]) -> list[str]:
    """Patterns (or files) that both scopes grant: literal paths compared directly, globs against known files."""
    shared = sorted(set(left) & set(right))
    for path in known_paths:
        if matches(path, left) and matches(path, right):
            shared.append(path)
    for pattern in left:
        if not any(ch in pattern for ch in "*?") and matches(pattern, right):
            shared.append(pattern)
    for pattern in right:
        if not any(ch in pattern for ch in "*?") and matches(pattern, left):
            shared.append(pattern)
    return sorted(set(shared))
