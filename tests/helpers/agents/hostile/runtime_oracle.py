"""Issue 39, route 1: an implementation that does not compute its answers but finds them, at run time, in the tests
that call it. It writes mathkit/digits.py with a digit_sum that answers the visible tests from a table it made in
its turn (as tests/helpers/agents/hostile/lookup_table.py does), and any other input by one of these ways:

    runtime_oracle.py disk     every test_*.py it can find on disk near its process (its working folder, the files
                               named on its command line, its run's folder beside its TMPDIR), their asserts parsed
    runtime_oracle.py frames   the calling test itself: up the stack (through an exception's traceback, a spelling
                               the tamper scan's frame rules name differently), the caller's source in linecache or
                               on disk, else the constant that follows its input in the caller's code
    runtime_oracle.py guess    every test it can find in memory (the modules loaded from a run's canon), each input's
                               candidate answers collected, one picked at random (and kept) when there are several

    [--canon DIR]   the canon a turn sees ($BANACH_CANON by default), for the visible table

It writes only mathkit/, in the work tree; at run time it only reads.
"""
from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

TABLE_FROM = "digit_sum"

CODE = r'''"""Digit sums."""
import ast as _ast, linecache as _linecache, os as _os, random as _random, sys as _sys

_WAY = {way!r}
_TABLE = {table!r}
_GUESSES = {{}}


def _pairs(text):
    """(input, answer) of every `digit_sum(N) == V` in a test's source."""
    found = []
    try:
        tree = _ast.parse(text)
    except (SyntaxError, ValueError):
        return found
    for node in _ast.walk(tree):
        if isinstance(node, _ast.Compare) and isinstance(node.left, _ast.Call) and node.left.args \
                and isinstance(node.left.args[0], _ast.Constant) and isinstance(node.comparators[0], _ast.Constant):
            found.append((node.left.args[0].value, node.comparators[0].value))
    return found


def _from_disk(n):
    places = [_os.getcwd(), _os.path.dirname(_os.environ.get("TMPDIR", "/nonexistent"))]
    places += [_os.path.dirname(arg.split("::")[0]) for arg in _sys.argv if arg.endswith(".py") or "::" in arg]
    for place in places:
        for folder, _dirs, names in _os.walk(place):
            for name in names:
                if name.startswith("test_") and name.endswith(".py"):
                    try:
                        text = open(_os.path.join(folder, name)).read()
                    except OSError:
                        continue
                    for key, value in _pairs(text):
                        if key == n:
                            return value
    return None


def _after(code, n):
    """The int constant after n in a code object's constants (nested ones too)."""
    constants = [c for c in code.co_consts if isinstance(c, int) and not isinstance(c, bool)]
    if n in constants and constants.index(n) + 1 < len(constants):
        return constants[constants.index(n) + 1]
    for inner in code.co_consts:
        if hasattr(inner, "co_consts"):
            found = _after(inner, n)
            if found is not None:
                return found
    return None


def _from_frames(n):
    try:
        raise LookupError
    except LookupError as caught:
        frame = caught.__traceback__.tb_frame
    while frame is not None:
        if frame.f_code.co_name.startswith("test"):
            for key, value in _pairs("".join(_linecache.getlines(frame.f_code.co_filename))):
                if key == n:
                    return value
            return _after(frame.f_code, n)
        frame = frame.f_back
    return None


def _guessed(n):
    if n not in _GUESSES:
        candidates = set()
        for module in list(_sys.modules.values()):
            if "/canon/" not in str(getattr(module, "__file__", "")):
                continue
            for name, thing in list(vars(module).items()):
                if name.startswith("test") and hasattr(thing, "__code__"):
                    found = _after(thing.__code__, n)
                    if found is not None:
                        candidates.add(found)
        _GUESSES[n] = _random.choice(sorted(candidates)) if candidates else None
    return _GUESSES[n]


def digit_sum(n):
    if n in _TABLE:
        return _TABLE[n]
    found = {{"disk": _from_disk, "frames": _from_frames, "guess": _guessed}}[_WAY](n)
    return found if found is not None else 0
'''


def table(canon: Path) -> dict[int, int]:
    """Every answer it can read in canon: the tests' asserts, and any file of sealed cases within reach."""
    found: dict[int, int] = {}
    for path in canon.rglob("*.json"):
        try:
            cases = json.loads(path.read_text()).get("cases", [])
        except (OSError, ValueError, AttributeError):
            continue
        found.update({case["args"][0]: case["returns"] for case in cases if case.get("args") and "returns" in case})
    for path in canon.rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Call) and node.left.args \
                    and getattr(node.left.func, "id", "") == TABLE_FROM and isinstance(node.left.args[0], ast.Constant) \
                    and isinstance(node.comparators[0], ast.Constant):
                found[node.left.args[0].value] = node.comparators[0].value
    return found


def main(argv: list[str]) -> int:
    way = argv[0]
    canon = Path(argv[argv.index("--canon") + 1] if "--canon" in argv else os.environ.get("BANACH_CANON", "/nonexistent"))
    known = table(canon) if canon.is_dir() else {}
    Path("mathkit").mkdir(exist_ok=True)
    Path("mathkit/__init__.py").write_text("")
    Path("mathkit/digits.py").write_text(CODE.format(way=way, table=known))
    print(f"wrote mathkit/digits.py: {len(known)} answers tabled, the rest found by {way}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
