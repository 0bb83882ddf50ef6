"""Canaries: must-fail tests hidden among canon's own, in a copy of canon made for one conformance run.

Each run gets several, written into the run's copy of the test files themselves, between the real tests, named
from the words of the test names around them and shaped like them: a canary is a copy of one of the file's own
tests (same fixtures, same calls into the code) with one more assertion at its end that cannot hold. Code under
test that rewrites pytest's reports from inside the test process cannot tell them from canon's tests by their
file, their name or what they call; a blanket "everything passed" flips at least one, and any canary reported
passing voids the run (shared/conformance.py). Code that carries canon's test names in it can still tell them
apart: SECURITY.md says so, and the tamper scan (shared/tamper.py) looks for the machinery such code needs.
"""
from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from pathlib import Path

COUNT = 3  # canaries per run
_FALLBACK_WORDS = ("empty", "edge", "twice", "long", "mixed", "plain", "unicode", "spaces", "order", "default",
                   "none", "large", "small", "repeated", "nested", "single", "many", "keeps", "returns", "handles")
_rng = random.SystemRandom()


@dataclass(frozen=True)
class _Planned:
    file: str  # relative to canon's root
    before_line: int  # 1-based line the canary goes before (len(lines) + 1: at the end)
    source: str
    node: str


def _words(tree: ast.Module, stem: str) -> list[str]:
    names = [node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    words = {word for name in [*names, stem] for word in name.lower().split("_") if word.isalpha() and word != "test"}
    return sorted(words) or list(_FALLBACK_WORDS)


def _donors(tree: ast.Module) -> list[ast.FunctionDef]:
    """Top-level tests a canary may copy: plain functions whose last statement always runs (no return, no yield)."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test") and not node.decorator_list:
            if not any(isinstance(inner, ast.Return | ast.Yield | ast.YieldFrom) for inner in ast.walk(node)):
                found.append(node)
    return found


def _name(words: list[str], taken: set[str]) -> str:
    for _ in range(50):
        chosen = _rng.sample(words, k=min(len(words), _rng.choice((2, 2, 3)))) if len(words) > 1 else [
            words[0], _rng.choice(_FALLBACK_WORDS)]
        name = "test_" + "_".join(chosen)
        if name not in taken:
            return name
        words = [*words, _rng.choice(_FALLBACK_WORDS)]
    raise RuntimeError("no free canary name")  # 50 collisions in a row: not in any real file


def _failing_assert(indent: str) -> str:
    left = _rng.randrange(10, 10**6)
    return f"{indent}assert {left} == {left + _rng.randrange(1, 10**5)}\n"


def _altered(statement: ast.stmt) -> str | None:
    """The donor's last `assert x == LITERAL`, with a literal that differs: the canary then reads like one more case
    of the same test. None when its last statement is not of that shape."""
    if not (isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare)
            and len(statement.test.ops) == 1 and isinstance(statement.test.ops[0], ast.Eq)):
        return None
    expected = statement.test.comparators[0]
    if not isinstance(expected, ast.Constant) or isinstance(expected.value, bool):
        return None
    value = expected.value
    other: str | int | float
    if isinstance(value, str):
        other = value + _rng.choice("abcdefghijklmnopqrstuvwxyz-_ ")
    elif isinstance(value, int | float):
        other = value + _rng.randrange(1, 97)
    else:
        return None
    changed = ast.Assert(ast.Compare(statement.test.left, [ast.Eq()], [ast.Constant(other)]), statement.msg)
    return ast.unparse(changed)


def _canary_source(lines: list[str], donor: ast.FunctionDef | None, name: str) -> str:
    if donor is None:
        return f"def {name}():\n{_failing_assert('    ')}\n\n"
    end = donor.end_lineno or donor.lineno
    body = [line if line.endswith("\n") else line + "\n" for line in lines[donor.lineno - 1: end]]
    body[0] = re.sub(rf"\bdef\s+{re.escape(donor.name)}\s*\(", f"def {name}(", body[0], count=1)
    last = donor.body[-1]
    first = lines[last.lineno - 1]
    indent = first[: len(first) - len(first.lstrip())] or "    "
    altered = _altered(last) if last.lineno > donor.lineno else None
    if altered is not None:
        start = last.lineno - donor.lineno
        after = (last.end_lineno or last.lineno) - donor.lineno + 1
        return "".join(body[:start]) + indent + altered + "\n" + "".join(body[after:]) + "\n\n"
    return "".join(body) + _failing_assert(indent) + "\n\n"


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

    def original_line(self, file: str, line: int) -> int:
        """A line number of the copy as it is in canon's file (a canary's own lines map to the line after it)."""
        shift = 0
        for before, count in sorted(self.inserted.get(file, ())):
            if line - shift >= before + count:
                shift += count
            elif line - shift >= before:
                return before
        return line - shift


def plant(copy: Path, files: list[str], count: int = COUNT) -> Planted:
    """Write `count` canaries into the test files of this run in `copy` (made writable for it). A file that does not
    parse gets none; with no file that parses, they go into a new file beside the first."""
    parsed: dict[str, tuple[ast.Module, list[str]]] = {}
    for file in dict.fromkeys(files):
        try:
            text = (copy / file).read_text(encoding="utf-8")
            parsed[file] = (ast.parse(text), text.splitlines(keepends=True))
        except (OSError, SyntaxError, ValueError, RecursionError):
            continue
    if not parsed:
        first = Path(files[0]) if files else Path("tests/test_conformance.py")
        stem_words = _words(ast.parse(""), first.stem)
        new = str(first.parent / f"{_name(stem_words, set())}.py")
        parsed[new] = (ast.parse(""), [])
    order = list(parsed)
    _rng.shuffle(order)
    planned: list[_Planned] = []
    taken = {node.name for tree, _ in parsed.values() for node in ast.walk(tree)
             if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
    # nor a test file's own name: what a person reads of the run drops every line naming a canary, paths among them
    taken |= {Path(file).stem for file in files} | {Path(file).stem for file in parsed}
    for index in range(count):
        file = order[index % len(order)]
        tree, lines = parsed[file]
        name = _name(_words(tree, Path(file).stem), taken)
        taken.add(name)
        donors = _donors(tree)
        source = _canary_source(lines, _rng.choice(donors) if donors else None, name)
        planned.append(_Planned(file, _rng.choice(_slots(tree, lines)), source, f"{file}::{name}"))
    inserted: dict[str, tuple[tuple[int, int], ...]] = {}
    for file in {p.file for p in planned}:
        mine = sorted((p for p in planned if p.file == file), key=lambda p: p.before_line)
        inserted[file] = tuple((p.before_line, p.source.count("\n")) for p in mine)
        written = list(parsed[file][1])
        if written and not written[-1].endswith("\n"):
            written[-1] += "\n"
        for canary in sorted((p for p in planned if p.file == file), key=lambda p: p.before_line, reverse=True):
            at = canary.before_line - 1
            written[at:at] = [canary.source]
        target = copy / file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(written), encoding="utf-8")
    return Planted(tuple(p.node for p in planned), inserted)


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
