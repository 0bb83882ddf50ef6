"""Conformance tests beyond Python: which runner measures a test file, and the tests a JavaScript, TypeScript or Go
test file defines, read from its text (never run).

    runner_of("tests/slug.test.ts")      -> "node"     (node --test; TypeScript through the project's tsx)
    runner_of("tests/slug_test.go")      -> "go"       (go test -json)
    runner_of("tests/test_slug.py")      -> "pytest"
    blocks(source, "node")               -> the file's top-level tests: test(...)/it(...)/describe(...)/suite(...)
    blocks(source, "go")                 -> its top-level `func TestXxx(t *testing.T) { ... }`

A node id names a top-level test: `tests/slug.test.ts::keeps digits` (the string its test() call names; a describe
block is one test, failing when any test in it fails), `tests/slug_test.go::TestSlugify` (subtests count toward their
top-level test). The reading is a small lexer of the C family (strings, template literals, regular expressions,
comments, brackets), enough to find top-level calls and literals; it never evaluates anything.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

NODE_SUFFIXES = (".test.ts", ".test.mts", ".test.cts", ".test.js", ".test.mjs", ".test.cjs")
TYPESCRIPT = (".ts", ".mts", ".cts")
NODE_CALLS = ("test", "it", "describe", "suite")
_GO_TEST = re.compile(r"^Test(?:[^a-z].*)?$")
_REGEX_AFTER = set("(,=:[!&|?{};+-*%<>~^") | {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete",
                                                "void", "throw", "yield", "await"}


def runner_of(path: str) -> str | None:
    """"pytest", "node" or "go" for a conformance test file by its name, or None for a file no runner measures."""
    name = PurePosixPath(path).name
    if name.endswith(".py"):
        return "pytest" if name.startswith("test_") or name.endswith("_test.py") else None
    if name.endswith(NODE_SUFFIXES):
        return "node"
    if name.endswith("_test.go"):
        return "go"
    return None


def is_test_file(path: str) -> bool:
    """A conformance test file of any runner (conftest.py and helpers are not)."""
    return runner_of(path) is not None


@dataclass(frozen=True)
class Token:
    kind: str  # "str" (quoted, no interpolation), "tmpl" (a template literal), "num", "id", "punct", "regex"
    text: str
    start: int
    end: int


def _skip_string(source: str, at: int, quote: str) -> int:
    """The index just past the string opening at `at`."""
    index = at + 1
    while index < len(source):
        char = source[index]
        if char == "\\":
            index += 2
            continue
        if char == quote or (char == "\n" and quote in "'\""):
            return index + 1
        index += 1
    return index


def _skip_template(source: str, at: int) -> tuple[int, bool]:
    """The index just past the template literal at `at`, and whether it interpolates (`${...}`)."""
    index, interpolates = at + 1, False
    while index < len(source):
        char = source[index]
        if char == "\\":
            index += 2
            continue
        if char == "`":
            return index + 1, interpolates
        if source.startswith("${", index):
            interpolates, depth, index = True, 1, index + 2
            while index < len(source) and depth:
                if source[index] in "'\"":
                    index = _skip_string(source, index, source[index])
                    continue
                if source[index] == "`":
                    index, _ = _skip_template(source, index)
                    continue
                depth += {"{": 1, "}": -1}.get(source[index], 0)
                index += 1
            continue
        index += 1
    return index, interpolates


def tokens(source: str, language: str) -> list[Token]:
    """The file's tokens, comments and blanks left out. language: "node" (JavaScript, TypeScript) or "go"."""
    found: list[Token] = []
    index, size = 0, len(source)
    while index < size:
        char = source[index]
        if char.isspace():
            index += 1
        elif source.startswith("//", index):
            index = source.find("\n", index) if "\n" in source[index:] else size
        elif source.startswith("/*", index):
            end = source.find("*/", index + 2)
            index = size if end < 0 else end + 2
        elif char in "'\"":
            end = _skip_string(source, index, char)
            found.append(Token("str", source[index:end], index, end))
            index = end
        elif char == "`":
            if language == "go":  # a raw string: no escapes, no interpolation
                end = source.find("`", index + 1)
                end = size if end < 0 else end + 1
                found.append(Token("raw", source[index:end], index, end))
            else:
                end, interpolates = _skip_template(source, index)
                found.append(Token("tmpl" if interpolates else "str", source[index:end], index, end))
            index = end
        elif char == "/" and language == "node" and (not found or found[-1].text in _REGEX_AFTER):
            end, in_class = index + 1, False
            while end < size and source[end] != "\n" and (in_class or source[end] != "/"):
                in_class = (in_class or source[end] == "[") and source[end] != "]"
                end += 2 if source[end] == "\\" else 1
            end += 1
            while end < size and (source[end].isalnum() or source[end] == "_"):
                end += 1
            found.append(Token("regex", source[index:end], index, end))
            index = end
        elif char.isdigit() or (char == "." and index + 1 < size and source[index + 1].isdigit()):
            match = re.compile(r"[0-9a-fA-FxXoObB_.]+(?:[eE][+-]?\d+)?n?").match(source, index)
            end = match.end() if match else index + 1
            found.append(Token("num", source[index:end], index, end))
            index = end
        elif char.isalpha() or char in "_$":
            match = re.compile(r"[\w$]+").match(source, index)
            end = match.end() if match else index + 1
            found.append(Token("id", source[index:end], index, end))
            index = end
        else:
            width = 2 if source[index:index + 2] in ("!=", "==", ":=", "=>", "&&", "||") else 1
            if source[index:index + 3] in ("!==", "==="):
                width = 3
            found.append(Token("punct", source[index:index + width], index, index + width))
            index += width
    return found


def closing(toks: list[Token], opening: int) -> int:
    """The index of the bracket closing the one at toks[opening] (len(toks) when it never closes)."""
    depth = 0
    for index in range(opening, len(toks)):
        text = toks[index].text
        if toks[index].kind == "punct" and text in "([{":
            depth += 1
        elif toks[index].kind == "punct" and text in ")]}":
            depth -= 1
            if depth == 0:
                return index
    return len(toks)


@dataclass(frozen=True)
class Block:
    """One top-level test of a file: its name, where its text is, and which token names it."""
    name: str
    start: int  # character offsets of the whole block in the source
    end: int
    name_token: Token
    first: int  # token indexes of the block, inclusive
    last: int


def string_value(token: Token) -> str | None:
    """The value of a simple quoted literal ('...', "...", a template without interpolation), or None where it has
    escapes this reader does not spell back exactly."""
    if token.kind not in ("str", "raw") or len(token.text) < 2:
        return None
    body = token.text[1:-1]
    if token.kind == "raw":
        return body
    simple = {"\\\\": "\\", "\\n": "\n", "\\t": "\t", "\\r": "\r", "\\'": "'", '\\"': '"', "\\`": "`"}
    out, index = [], 0
    while index < len(body):
        if body[index] == "\\":
            pair = body[index:index + 2]
            if pair not in simple:
                return None
            out.append(simple[pair])
            index += 2
        else:
            out.append(body[index])
            index += 1
    return "".join(out)


def blocks(source: str, language: str) -> list[Block]:
    """The file's top-level tests in order: for node, calls of test/it/describe/suite (and their .skip, .only, .todo)
    at the top level whose first argument is a plain string; for go, functions named TestXxx."""
    toks = tokens(source, language)
    found: list[Block] = []
    index = 0
    while index < len(toks):
        tok = toks[index]
        if tok.kind == "punct" and tok.text in "([{":
            index = closing(toks, index) + 1
            continue
        if language == "node" and tok.kind == "id" and tok.text in NODE_CALLS and \
                (index == 0 or toks[index - 1].text not in (".", "function")):
            call = index + 1
            while call + 1 < len(toks) and toks[call].text == "." and toks[call + 1].kind == "id":
                call += 2
            if call + 1 < len(toks) and toks[call].text == "(" and toks[call + 1].kind == "str":
                name = string_value(toks[call + 1])
                last = closing(toks, call)
                if name is not None and last < len(toks):
                    end = toks[last + 1].end if last + 1 < len(toks) and toks[last + 1].text == ";" else toks[last].end
                    found.append(Block(name, tok.start, end, toks[call + 1], index, last))
                    index = last + 1
                    continue
        if language == "go" and tok.kind == "id" and tok.text == "func" and index + 2 < len(toks) and \
                toks[index + 1].kind == "id" and _GO_TEST.match(toks[index + 1].text) and toks[index + 2].text == "(":
            params = closing(toks, index + 2)
            body = next((i for i in range(params + 1, len(toks)) if toks[i].text == "{"), len(toks))
            last = closing(toks, body) if body < len(toks) else len(toks)
            if last < len(toks):
                found.append(Block(toks[index + 1].text, tok.start, toks[last].end, toks[index + 1], index, last))
                index = last + 1
                continue
        index += 1
    return found


def test_names(source: str, path: str) -> list[str]:
    """The top-level tests a node or go test file defines, by name, in order."""
    language = runner_of(path)
    return [block.name for block in blocks(source, language)] if language in ("node", "go") else []


def defines(source: str, path: str, name: str) -> bool:
    """Whether the test file defines a top-level test of this name (for pytest: a function or class)."""
    if runner_of(path) == "pytest" or path.endswith(".py"):
        base = name.split("::")[-1].split("[")[0]
        return bool(re.search(rf"^\s*(?:async\s+)?def {re.escape(base)}\b|^class {re.escape(base)}\b", source,
                              re.MULTILINE))
    return name in test_names(source, path)
