"""A JavaScript, TypeScript or Go conformance test file as one run gets it: every top-level test under a name of the
run's own, and canaries written between them. The rules are Python's (shared/measurement/canaries.py, renaming.py):

- a canary is a copy of one of the file's own top-level tests in which one expected value differs, in the quotes
  and spelling the original used, changed symmetrically (canaries.changed); its name comes from the same generator as
  every real test's run name, and its place is drawn among the file's own slots;
- an expected value is one the test checks, never one it feeds the code: for node the second argument of
  assert.equal / strictEqual / deepEqual / deepStrictEqual (a literal, or one inside an array or object literal
  there), or a literal under a key `expected:`, `want:`, `output:`; for go the literal of `if ... != LITERAL {`
  whose block calls t.Error/Errorf/Fatal/Fatalf/Fail, or a literal given to `want`, `expected`, `exp` (`:=`, `=`,
  or a keyed field of a table);
- canaries are spread over the questions until a guesser survives a run at most 1 time in 8; a file with no such
  literal gets plain failing canaries, which are easy to tell apart (SECURITY.md says so).
"""
from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass

from shared.measurement.canaries import COUNT, Planted, _spread, changed
from shared.measurement.suites import Block, Token, blocks, closing, string_value, tokens

_rng = random.SystemRandom()
NAME_LETTERS = 10
_NODE_ASSERTS = ("equal", "strictEqual", "deepEqual", "deepStrictEqual")
_NODE_KEYS = ("expected", "want", "wanted", "output", "expect")
_GO_KEYS = ("want", "wanted", "expected", "exp", "expect")
_GO_FAILS = ("Error", "Errorf", "Fatal", "Fatalf", "Fail", "FailNow")
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")


def run_name(language: str, taken: set[str]) -> str:
    """A fresh test name: `test_` and ten lowercase letters for node, `Test` and ten letters for go."""
    while True:
        letters = "".join(_rng.choice(string.ascii_lowercase) for _ in range(NAME_LETTERS))
        name = "Test" + letters.capitalize() if language == "go" else "test_" + letters
        if name not in taken:
            taken.add(name)
            return name


@dataclass(frozen=True)
class Site:
    """An expected value a canary may change: its token, and its value."""
    token: Token
    value: str | int | float


def _literal(token: Token, before: Token | None) -> Site | None:
    if before is not None and before.text == "-":
        return None
    if token.kind == "num" and _NUMBER.match(token.text):
        number: int | float = float(token.text) if "." in token.text else int(token.text)
        return Site(token, number) if abs(number) >= 2 and repr(number) == token.text else None
    value = string_value(token) if token.kind == "str" else None
    if value is None or len(value) < 2 or not value.isprintable() or _spelled(value, token.text[0]) != token.text:
        return None
    return Site(token, value)


def _node_sites(toks: list[Token], block: Block) -> list[Site]:
    found: list[Site] = []
    for index in range(block.first, block.last):
        tok = toks[index]
        if tok.text == "assert" and toks[index + 1].text == "." and toks[index + 2].text in _NODE_ASSERTS and \
                toks[index + 3].text == "(":
            opening = index + 3
            end = closing(toks, opening)
            depth, second = 0, None
            for inner in range(opening + 1, end):
                text = toks[inner].text
                depth += 1 if text in "([{" and toks[inner].kind == "punct" else -1 if text in ")]}" and \
                    toks[inner].kind == "punct" else 0
                if depth == 0 and text == ",":
                    if second is not None:
                        break
                    second = inner
                elif second is not None and toks[inner].kind in ("str", "num") and toks[inner + 1].text != ":":
                    site = _literal(toks[inner], toks[inner - 1])
                    if site and (depth > 0 or toks[inner + 1].text in (",", ")")):
                        found.append(site)
        elif tok.kind == "id" and tok.text in _NODE_KEYS and toks[index + 1].text == ":" and \
                toks[index + 3].text in (",", "}"):
            site = _literal(toks[index + 2], toks[index + 1])
            if site:
                found.append(site)
    return found


def _go_sites(toks: list[Token], block: Block) -> list[Site]:
    found: list[Site] = []
    for index in range(block.first, block.last):
        tok = toks[index]
        if tok.text == "!=" and toks[index + 2].text == "{":
            back = index
            while back > block.first and toks[back].text not in ("{", "}", "if"):
                back -= 1
            body = toks[index + 2: closing(toks, index + 2) + 1]
            fails = any(a.text == "." and b.text in _GO_FAILS for a, b in zip(body, body[1:], strict=False))
            site = _literal(toks[index + 1], None)
            if toks[back].text == "if" and fails and site:
                found.append(site)
        elif tok.kind == "id" and tok.text in _GO_KEYS and toks[index + 1].text in (":=", "=", ":") and \
                index + 3 <= block.last and toks[index + 3].text not in ("+", ".", "(", "[", "*", "/", "-", "%"):
            site = _literal(toks[index + 2], None)
            if site:
                found.append(site)
    return found


def _spelled(value: str | int | float, quote: str) -> str:
    if not isinstance(value, str):
        return repr(value)
    escapes = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", quote: "\\" + quote}
    text = "".join(escapes.get(char, char) for char in value)
    return quote + (text.replace("${", "\\${") if quote == "`" else text) + quote


@dataclass(frozen=True)
class Suite:
    """One test file as the run has it."""
    source: str
    planted: Planted
    names: dict[str, str]  # run name -> canon's name, for its real tests


def _edited(source: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, text in sorted(edits, key=lambda edit: (edit[0], edit[1]), reverse=True):
        source = source[:start] + text + source[end:]
    return source


def _slots(source: str, found: list[Block]) -> list[int]:
    """Offsets a canary may go before: the start of the line of each top-level test, or the end of the file."""
    slots = [len(source)]
    for block in found:
        line = source.rfind("\n", 0, block.start) + 1
        if not source[line:block.start].strip():
            slots.append(line)
    return slots


def _name_text(language: str, token: Token, name: str) -> str:
    return name if language == "go" else _spelled(name, token.text[0])


def prepare(source: str, file: str, language: str, taken: set[str], count: int = COUNT) -> Suite:
    """file: its canon path, for node ids. taken: names the run has given (a canary's and a test's never meet)."""
    toks = tokens(source, language)
    found = blocks(source, language)
    names = {run_name(language, taken): block.name for block in found}
    by_block = dict(zip((block.name_token.start for block in found), names, strict=True))
    edits = [(block.name_token.start, block.name_token.end, _name_text(language, block.name_token,
                                                                      by_block[block.name_token.start]))
             for block in found]
    reader = _go_sites if language == "go" else _node_sites
    questions = [(block, site) for block in found for site in reader(toks, block)]
    _rng.shuffle(questions)
    answers: dict[int, set[object]] = {index: {site.value} for index, (_, site) in enumerate(questions)}
    slots = _slots(source, found)
    donors: dict[str, str] = {}
    nodes: list[str] = []
    for index in _spread(len(questions), count):
        name = run_name(language, taken)
        if index is None:
            text = _plain(language, name, toks[found[0].first].text if found else "test")
        else:
            block, site = questions[index]
            value = changed(site.value)
            for _ in range(20):
                if value not in answers[index]:
                    break
                value = changed(site.value)
            answers[index].add(value)
            quote = site.token.text[0] if isinstance(site.value, str) else ""
            local = [(block.name_token.start - block.start, block.name_token.end - block.start,
                      _name_text(language, block.name_token, name)),
                     (site.token.start - block.start, site.token.end - block.start, _spelled(value, quote))]
            text = _edited(source[block.start:block.end], local)
            donors[f"{file}::{name}"] = f"{file}::{block.name}"
        slot = _rng.choice(slots)
        edits.append((slot, slot, text + "\n\n" if slot < len(source) else "\n\n" + text + "\n"))
        nodes.append(f"{file}::{name}")
    inserted = tuple(sorted((source.count("\n", 0, start) + 1, text.count("\n"))
                            for start, end, text in edits if start == end))
    return Suite(_edited(source, edits), Planted(tuple(nodes), {file: inserted}, donors), names)


def _plain(language: str, name: str, callee: str) -> str:
    """A canary that fails plainly: no test of the file has a value to change."""
    left = _rng.randrange(10, 10**6)
    right = left + _rng.randrange(1, 10**5)
    if language == "go":
        return f"func {name}(t *testing.T) {{\n\tif got := {left}; got != {right} {{\n\t\tt.Errorf(\"got %d\", got)\n\t}}\n}}"
    check = f"if ({left} !== {right}) throw new Error(\"{left} !== {right}\");"
    return f"{callee}({_spelled(name, chr(34))}, () => {{\n  {check}\n}});"
