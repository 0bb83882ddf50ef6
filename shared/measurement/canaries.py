"""Canaries: must-fail tests hidden among canon's own, in the sources of one conformance run.

Each run gets several, written into the run's test sources between the real tests. A canary is a copy of one of the
file's own tests (same fixtures, same calls into the code, same formatting) in which one expected value of an
`assert ... == LITERAL` differs, so the copy reads like one more case of the same test. Nothing tells the two apart:
- its name comes from the same generator as every real test's name in the run (shared/measurement/renaming.py);
- the literal is rewritten in place, in the quotes and spelling the original used;
- the change is symmetric: a string gains, loses or changes one character (each a third of the time, drawn from its
  own characters), a number moves up or down, so neither "the shorter", "the longer" nor "the smaller" is a rule;
- its place in the file is drawn among the file's own slots.
So code under test that finds, in its process, two tests asking the same question with different expected values
must guess which is canon's; it guesses wrong half the time for each canary, and any canary reported passing voids
the run when the test it copies passes too (shared/measurement/conformance.py: honest code that fails a test may
well give the canary's value; code that passes both answers from the question, not the code), and a wrong guess
fails the real test instead: with COUNT canaries a guesser survives a run at most 1 time in 8.
Code that knows canon's visible tests by their content still can tell (it knows the real values): SECURITY.md says
so, and sealed cases are the defence. Each canary changes one question (an expected value of one test), and canaries
are spread over the questions until a guesser's chance of picking every real answer is at most 1 in 8: three
questions with a canary each, or more canaries on fewer (1 in 2 x 1 in 4 for two questions, 1 in 8 for one).
"""
from __future__ import annotations

import ast
import math
import random
import re
from dataclasses import dataclass, field

from shared.measurement.renaming import test_name

COUNT = 3  # canaries per run, at least
MAX_COUNT = 8  # and at most
SURVIVAL = 8  # a guesser survives a run at most 1 time in this many
_rng = random.SystemRandom()


@dataclass(frozen=True)
class _Literal:
    """An expected value a canary may change: where it is in the donor's lines, and its value."""
    row: int  # 0-based, relative to the donor's first line
    start: int
    end: int
    value: str | int | float


def _spelled(value: str | int | float, quote: str) -> str:
    """value as a Python literal, strings in `quote` with only what must be escaped escaped."""
    if not isinstance(value, str):
        return repr(value)
    out = []
    for char in value:
        if char == "\\":
            out.append("\\\\")
        elif char == quote:
            out.append("\\" + quote)
        elif char in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[char])
        elif not char.isprintable():
            out.append(repr(char)[1:-1])
        else:
            out.append(char)
    return quote + "".join(out) + quote


def _eligible(node: ast.expr, lines: list[str]) -> bool:
    """A constant whose text is one simple literal we can spell back exactly as written, and change symmetrically."""
    if not isinstance(node, ast.Constant) or isinstance(node.value, bool) or node.lineno != node.end_lineno:
        return False
    text = lines[node.lineno - 1][node.col_offset:node.end_col_offset]
    value = node.value
    if isinstance(value, str):
        return len(value) >= 2 and text[:1] in "\"'" and _spelled(value, text[0]) == text
    if isinstance(value, int | float):
        return abs(value) >= 2 and repr(value) == text
    return False


def _literals(donor: ast.FunctionDef, lines: list[str]) -> list[_Literal]:
    """The expected values of the donor's own top-level `assert X == LITERAL` (or `LITERAL == X`) statements."""
    found = []
    for statement in donor.body:
        test = statement.test if isinstance(statement, ast.Assert) else None
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
            continue
        for side in (test.comparators[0], test.left):
            if _eligible(side, lines):
                found.append(_Literal(side.lineno - donor.lineno, side.col_offset, side.end_col_offset or 0,
                                      side.value))  # type: ignore[attr-defined]
                break
    return found


def changed(value: str | int | float) -> str | int | float:
    """value changed symmetrically: one character inserted, deleted or replaced (from its own characters); a number
    moved up or down by up to half its size."""
    if isinstance(value, str):
        alphabet = sorted(set(value))
        position = _rng.randrange(len(value))
        way = _rng.choice(("insert", "delete", "replace"))
        if way == "insert":
            return value[:position] + _rng.choice(alphabet) + value[position:]
        if way == "delete":
            return value[:position] + value[position + 1:]
        others = [char for char in alphabet if char != value[position]] or [c for c in "abcdefghij" if c != value[position]]
        return value[:position] + _rng.choice(others) + value[position + 1:]
    step = _rng.randint(1, max(1, int(abs(value)) // 2))
    return value + step * _rng.choice((-1, 1))


def _donors(tree: ast.Module, lines: list[str], running: set[str] | None) -> list[tuple[ast.FunctionDef, list[_Literal]]]:
    """Top-level tests a canary may copy: plain test functions (no decorators) that this run runs (`running`; None:
    all of the file), with an eligible expected value, that never return early (a canary's changed assert must run)."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test") and not node.decorator_list \
                and (running is None or node.name in running) and not any(
                isinstance(inner, ast.Return | ast.Yield | ast.YieldFrom) for inner in ast.walk(node)):
            literals = _literals(node, lines)
            if literals:
                found.append((node, literals))
    return found


def _from(donor: ast.FunctionDef, literal: _Literal, lines: list[str], name: str, used: set[object]) -> str:
    """A copy of donor named `name` with `literal` changed to a value not in `used` (the question's real answer and
    every canary's answer to it so far), which it joins."""
    first = min([donor.lineno, *(d.lineno for d in donor.decorator_list)])
    body = [line if line.endswith("\n") else line + "\n" for line in lines[first - 1: donor.end_lineno or donor.lineno]]
    offset = donor.lineno - first
    row = body[offset + literal.row]
    quote = row[literal.start] if isinstance(literal.value, str) else ""
    value = changed(literal.value)
    for _ in range(20):
        if value not in used:
            break
        value = changed(literal.value)
    used.add(value)
    body[offset + literal.row] = row[:literal.start] + _spelled(value, quote) + row[literal.end:]
    body[offset] = re.sub(rf"\bdef\s+{re.escape(donor.name)}\s*\(", f"def {name}(", body[offset], count=1)
    return "".join(body) + "\n\n"


def _fallback(name: str) -> str:
    """No test of the run has a value to change: a canary that fails plainly (telling it apart is then easy, which
    SECURITY.md says; give canon's tests `assert ... == value` to make canaries good)."""
    left = _rng.randrange(10, 10**6)
    return f"def {name}():\n    assert {left} == {left + _rng.randrange(1, 10**5)}\n\n\n"


def _slots(tree: ast.Module, lines: list[str]) -> list[int]:
    """Lines a new top-level function may go before: each top-level test (above its decorators), or the end."""
    slots = [len(lines) + 1]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            slots.append(min([node.lineno, *(d.lineno for d in node.decorator_list)]))
    return slots


@dataclass(frozen=True)
class Planted:
    """Where the canaries of one run are: their node ids, and per file the lines written before each original line."""

    nodes: tuple[str, ...]
    inserted: dict[str, tuple[tuple[int, int], ...]]  # file -> (original line it went before, lines written)
    donors: dict[str, str] = field(default_factory=dict)  # canary -> the test it copies (none: a plain failing one)

    def original_line(self, file: str, line: int) -> int:
        """A line number of the run's source as it is in canon's file (a canary's own lines map to the line after it)."""
        shift = 0
        for before, count in sorted(self.inserted.get(file, ())):
            if line - shift >= before + count:
                shift += count
            elif line - shift >= before:
                return before
        return line - shift


def plant(sources: dict[str, str], files: list[str], taken: set[str], count: int = COUNT,
          running: dict[str, set[str] | None] | None = None) -> tuple[dict[str, str], Planted]:
    """Write `count` canaries into the run's test `files` (relative paths among sources), each named by the run's own
    generator (taken: the names already given), each a copy of a test the run runs (running: per file, the test
    names it runs, None for all). A file that does not parse gets none; with none that parses they go into a new
    file beside the first. Returns the sources with the canaries in, and where they are."""
    running = running or {}
    parsed: dict[str, tuple[ast.Module, list[str]]] = {}
    for file in dict.fromkeys(files):
        try:
            parsed[file] = (ast.parse(sources[file]), sources[file].splitlines(keepends=True))
        except (KeyError, SyntaxError, ValueError, RecursionError):
            continue
    if not parsed:
        first = files[0].rsplit("/", 1)[0] if files and "/" in files[0] else "tests"
        parsed[f"{first}/{test_name(taken)}.py"] = (ast.parse(""), [])
    donors = {file: _donors(tree, lines, running.get(file)) for file, (tree, lines) in parsed.items()}
    with_donors = [file for file in parsed if donors[file]] or list(parsed)
    planned: list[tuple[str, int, str, str]] = []  # (file, before line, source, node)
    copied: dict[str, str] = {}
    questions = [(file, donor, literal) for file in with_donors for donor, literals in donors[file] for literal in literals]
    _rng.shuffle(questions)
    answers: dict[int, set[object]] = {index: {question[2].value} for index, question in enumerate(questions)}
    for index in _spread(len(questions), count):
        name = test_name(taken)
        if index is None:
            file = _rng.choice(with_donors)
            source = _fallback(name)
        else:
            file, donor, literal = questions[index]
            source = _from(donor, literal, parsed[file][1], name, answers[index])
            copied[f"{file}::{name}"] = f"{file}::{donor.name}"
        tree, lines = parsed[file]
        planned.append((file, _rng.choice(_slots(tree, lines)), source, f"{file}::{name}"))
    result = dict(sources)
    inserted: dict[str, tuple[tuple[int, int], ...]] = {}
    for file in {entry[0] for entry in planned}:
        mine = sorted((entry for entry in planned if entry[0] == file), key=lambda entry: entry[1])
        inserted[file] = tuple((before, source.count("\n")) for _, before, source, _ in mine)
        written = list(parsed[file][1])
        if written and not written[-1].endswith("\n"):
            written[-1] += "\n"
        for _, before, source, _ in reversed(mine):
            written[before - 1:before - 1] = [source]
        result[file] = "".join(written)
    return result, Planted(tuple(entry[3] for entry in planned), inserted, copied)


def _spread(questions: int, count: int) -> list[int | None]:
    """Which question each canary changes (None: a plain failing canary, when there is none to change): round the
    shuffled questions, at least `count` canaries, until a guesser that picks among each question's candidate answers
    survives at most 1 time in SURVIVAL (the product of 1 + canaries per question), at most MAX_COUNT canaries."""
    if not questions:
        return [None] * count
    chosen: list[int | None] = []
    per: dict[int, int] = {}
    while len(chosen) < MAX_COUNT and (len(chosen) < count or math.prod(1 + n for n in per.values()) < SURVIVAL):
        index = len(chosen) % questions
        per[index] = per.get(index, 0) + 1
        chosen.append(index)
    return chosen


_HEADER = re.compile(r"^_{3,} (?P<name>\S+) _{3,}$")
_LOCATION = re.compile(r"(?P<file>[\w./-]+\.py):(?P<line>\d+)")
_COUNTS = re.compile(r"^(?P<lead>=*\s*)(?P<counts>(?:\d+ \w+(?:, )?)+)(?P<tail> in [\d.]+s.*)$")


def hide(output: str, planted: Planted, prefixes: list[tuple[str, str]], outcomes: dict[str, str]) -> str:
    """pytest's output as if the canaries had never been there: their failure blocks and summary lines gone, their
    outcomes taken out of the closing counts, and paths and line numbers those of canon's own files.
    prefixes: (how the output names the copy, how it should name canon) pairs; outcomes: each canary's outcome as
    pytest's closing line counts it ("failed", "error", "skipped", "passed")."""
    names = {node.rsplit("::", 1)[1] for node in planted.nodes}
    originals = [original for _, original in prefixes]
    kept: list[str] = []
    skipping = False
    for copy, original in prefixes:
        output = output.replace(copy + "/", original + "/")
    for line in output.splitlines():
        header = _HEADER.match(line)
        if header or line.startswith("="):
            skipping = header is not None and header["name"] in names
        if skipping or any(re.search(rf"\b{name}\b", line) for name in names):
            continue
        kept.append(_recount(_relocate(line, planted, originals), outcomes))
    return "\n".join(kept)


def _relocate(line: str, planted: Planted, originals: list[str]) -> str:
    def original(match: re.Match[str]) -> str:
        path = match["file"]
        relative = next((path[len(p) + 1:] for p in originals if path.startswith(p + "/")), path)
        if relative not in planted.inserted:
            return match.group(0)
        return f"{path}:{planted.original_line(relative, int(match['line']))}"

    return _LOCATION.sub(original, line)


def _recount(line: str, outcomes: dict[str, str]) -> str:
    found = _COUNTS.match(line)
    if not found or not outcomes:
        return line
    counts: dict[str, int] = {}
    for part in found["counts"].split(", "):
        number, _, kind = part.partition(" ")
        counts[kind] = int(number)
    for outcome in outcomes.values():
        for kind in (outcome, outcome + "s", outcome.rstrip("s")):
            if counts.get(kind):
                counts[kind] -= 1
                break
    shown = ", ".join(f"{number} {kind}" for kind, number in counts.items() if number)
    return f"{found['lead']}{shown or 'no tests ran'}{found['tail']}"
