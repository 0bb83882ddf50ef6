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


def _fixed_folder(pattern: str) -> str:
    """The folder a glob cannot leave: its path up to the last '/' before the first wildcard ('' for the root)."""
    cut = min((pattern.index(ch) for ch in "*?[" if ch in pattern), default=len(pattern))
    return pattern[:cut].rpartition("/")[0]


def may_overlap(left: tuple[str, ...] | list[str], right: tuple[str, ...] | list[str]) -> bool:
    """Whether some path, existing or not yet written, could be granted by both scopes. Conservative for two globs:
    they may overlap unless their fixed folders are apart (neither inside the other)."""
    return any(_may_overlap(a, b) for a in left for b in right)


def _may_overlap(a: str, b: str) -> bool:
    a_glob, b_glob = any(ch in a for ch in "*?"), any(ch in b for ch in "*?")
    if a_glob and b_glob:
        x, y = _fixed_folder(a), _fixed_folder(b)
        return not x or not y or x == y or x.startswith(y + "/") or y.startswith(x + "/")
    if a_glob or b_glob:
        literal, pattern = (a, b) if b_glob else (b, a)
        if literal.endswith("/"):  # a folder: anything under it
            folder = literal.rstrip("/")
            fixed = _fixed_folder(pattern)
            return fixed == folder or fixed.startswith(folder + "/") or folder.startswith(fixed + "/") or not fixed
        return matches(literal, (pattern,))
    return a.rstrip("/") == b.rstrip("/") or (a.endswith("/") and b.startswith(a)) or (b.endswith("/") and a.startswith(b))
