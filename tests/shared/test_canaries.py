"""Canaries cannot be told from canon's tests by a rule (issue 39): not by name (the run names every test), not by
formatting (the literal is rewritten in place, in its own quotes), not by length or size (the change is symmetric),
and a canary copies only tests the run runs, so that a passing canary can be checked against the test it copies."""
from __future__ import annotations

import ast
import re
from collections import Counter

from shared.measurement.canaries import changed, plant
from shared.measurement.renaming import rename

SOURCE = '''from lib import slugify


def test_words():
    assert slugify("Hello World") == "hello-world"


def test_single_quoted():
    assert slugify('Fixed point') == 'fixed-point'


def test_counts():
    assert len(slugify("a b c")) == 5
'''


def _canaries(sources: dict[str, str], nodes: tuple[str, ...]) -> list[tuple[str, str]]:
    """(canary's source, the source of the test it copies), for one planting."""
    renamed = rename(sources, ["tests/test_s.py"])
    running = {"tests/test_s.py": {renamed.run_node(n).split("::")[1] for n in nodes}} if nodes else {}
    planted, where = plant(renamed.sources, ["tests/test_s.py"], renamed.taken, running=running)
    tree = ast.parse(planted["tests/test_s.py"])
    functions = {node.name: ast.get_source_segment(planted["tests/test_s.py"], node) or "" for node in tree.body
                 if isinstance(node, ast.FunctionDef)}
    return [(functions[canary.split("::")[1]], functions[where.donors[canary].split("::")[1]]) for canary in where.nodes]


def test_a_canary_reads_like_the_test_it_copies_but_for_one_literal() -> None:
    for _ in range(50):
        for canary, donor in _canaries({"tests/test_s.py": SOURCE}, ()):
            canary_lines, donor_lines = canary.splitlines(), donor.splitlines()
            assert len(canary_lines) == len(donor_lines)
            differ = [(a, b) for a, b in zip(canary_lines[1:], donor_lines[1:], strict=True) if a != b]
            assert len(differ) == 1, (canary, donor)
            left, right = differ[0]
            assert left.split("==")[0] == right.split("==")[0]  # the call is the same
            quote = right.split("==")[1].strip()[:1]
            if quote in "'\"":
                assert left.split("==")[1].strip()[:1] == quote  # the literal is spelled in the same quotes
            assert re.fullmatch(r"def test_[a-z]{10}\(\):", canary_lines[0]) and re.fullmatch(r"def test_[a-z]{10}\(\):",
                                                                                             donor_lines[0])


def test_no_length_or_size_rule_tells_a_canary_from_canon() -> None:
    """Over many changes, 'the shorter value is canon's' and 'the smaller number is canon's' are right about half of
    the time: a guesser is left with a coin."""
    lengths = [len(str(changed("creme-brulee-co"))) for _ in range(3000)]
    strings = Counter("longer" if n > 15 else "shorter" if n < 15 else "same" for n in lengths)
    assert all(800 < strings[kind] < 1200 for kind in ("longer", "shorter", "same")), strings
    numbers = Counter(changed(45) > 45 for _ in range(2000))  # type: ignore[operator]
    assert 850 < numbers[True] < 1150, numbers
    assert all(changed("ab") != "ab" for _ in range(500)) and all(changed(7) != 7 for _ in range(500))


def test_a_canary_copies_only_a_test_the_run_runs() -> None:
    for _ in range(30):
        for _canary, donor in _canaries({"tests/test_s.py": SOURCE}, ("tests/test_s.py::test_single_quoted",)):
            assert "'Fixed point'" in donor


def test_canaries_are_spread_until_a_guesser_survives_at_most_one_run_in_eight() -> None:
    """Survival of a guesser that picks one of each question's candidate answers: the product of 1 / (1 + canaries on
    that question). One question gets 7 canaries, two get 4 between them (1/3 x 1/3), three or more one each."""
    from math import prod

    from shared.measurement.canaries import _spread

    for questions in (1, 2, 3, 5):
        for _ in range(20):
            chosen = _spread(questions, 3)
            per = Counter(chosen)
            assert prod(1 + n for n in per.values()) >= 8, (questions, chosen)
            assert len(chosen) >= 3
    assert len(_spread(1, 3)) == 7 and len(_spread(3, 3)) == 3 and _spread(0, 3) == [None, None, None]
