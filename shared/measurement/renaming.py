"""Canon's tests under names of the run's own: every test a run collects (canon's and its canaries) is named by the
same random generator, so that code under test that watches which tests run learns nothing from a name: not which
tests are canon's (a forger that knows canon's test names cannot pick them out), not which are canaries.

    renamed = rename(sources, files)     # each test function and class in `files` renamed, every use of it too
    renamed.run_node("tests/test_a.py::test_x")  -> "tests/test_a.py::test_kqzmwhpxta"
    renamed.original(reported_node)              -> the name canon gives it (a canary keeps its run name)

Only what pytest collects is renamed: top-level `test*` functions that are not fixtures, `Test*` classes and their
`test*` methods; every token naming one of them in the same file follows, so the file runs as written. The text
is changed token by token (tokenize), so the source reads exactly as canon wrote it but for those names."""
from __future__ import annotations

import ast
import io
import random
import re
import string
import tokenize
from dataclasses import dataclass, field

_rng = random.SystemRandom()
NAME_LETTERS = 10


def test_name(taken: set[str]) -> str:
    """A fresh test function name, `test_` and ten lowercase letters, not in taken (and added to it)."""
    while True:
        name = "test_" + "".join(_rng.choice(string.ascii_lowercase) for _ in range(NAME_LETTERS))
        if name not in taken:
            taken.add(name)
            return name


def _class_name(taken: set[str]) -> str:
    while True:
        name = "Test" + "".join(_rng.choice(string.ascii_lowercase) for _ in range(NAME_LETTERS)).capitalize()
        if name not in taken:
            taken.add(name)
            return name


def _is_fixture(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any("fixture" in ast.unparse(decorator) for decorator in node.decorator_list)


def collected_names(tree: ast.Module) -> list[str]:
    """The names pytest collects in a test module, as defined at its top level and in its test classes."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test") \
                and not _is_fixture(node):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names.append(node.name)
            names += [inner.name for inner in node.body if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef)
                      and inner.name.startswith("test") and not _is_fixture(inner)]
    return list(dict.fromkeys(names))


def retoken(text: str, mapping: dict[str, str]) -> str:
    """text with every NAME token in mapping replaced, all else (spacing, comments, strings) as it was."""
    if not mapping:
        return text
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []  # (row, start column, end column, new)
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.NAME and token.string in mapping:
            edits.append((token.start[0], token.start[1], token.end[1], mapping[token.string]))
    for row, start, end, new in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:start] + new + line[end:]
    return "".join(lines)


@dataclass
class Renamed:
    """What a run's sources are, and how its names map to canon's (per file: canon's name -> the run's)."""
    sources: dict[str, str]
    names: dict[str, dict[str, str]] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)  # every name given in this run, for the canaries' to differ

    def run_node(self, node: str) -> str:
        """A node id of canon (file, or file::Class::test) as this run names it."""
        file, *parts = node.split("::")
        mapping = self.names.get(file, {})
        return "::".join([file, *(mapping.get(part, part) for part in parts)])

    def original(self, node: str) -> str:
        """A node id this run reported, as canon names it (parametrized ids keep their brackets)."""
        file, *parts = node.split("::")
        back = {new: old for old, new in self.names.get(file, {}).items()}
        named = []
        for part in parts:
            base, bracket, rest = part.partition("[")
            named.append(back.get(base, base) + bracket + rest)
        return "::".join([file, *named])

    def shown(self, text: str) -> str:
        """Output with the run's names replaced by canon's."""
        back = {new: old for mapping in self.names.values() for old, new in mapping.items()}
        if not back:
            return text
        return re.sub(r"\b(?:" + "|".join(map(re.escape, back)) + r")\b", lambda m: back[m.group(0)], text)


def rename(sources: dict[str, str], files: list[str]) -> Renamed:
    """Rename what pytest collects in `files` (relative paths among sources); a file that does not parse keeps its
    names (it fails to collect on its own)."""
    renamed = Renamed(dict(sources))
    for file in dict.fromkeys(files):
        text = sources.get(file)
        if text is None:
            continue
        try:
            names = collected_names(ast.parse(text))
        except (SyntaxError, ValueError, RecursionError):
            continue
        mapping = {name: _class_name(renamed.taken) if name.startswith("Test") else test_name(renamed.taken)
                   for name in names}
        try:
            renamed.sources[file] = retoken(text, mapping)
        except (tokenize.TokenError, SyntaxError, IndentationError):
            continue
        renamed.names[file] = mapping
    return renamed
