"""Sealed cases (issue 39): the code gets only inputs, and its answers are compared outside its process, as data."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared.measurement import sealed
from shared.measurement.cases import CasesError, load_cases
from shared.measurement.checkers import judge
from shared.process import run

CASES = {
    "call": "lib.slug",
    "cases": [
        {"args": ["Crème brûlée & co."], "returns": "creme-brulee-co"},
        {"args": ["  x  "], "returns": "x"},
        {"call": "lib.parts", "args": ["b a"], "returns": ["a", "b"], "compare": "unordered"},
        {"call": "lib.root", "args": [2], "returns": 1.41421356, "compare": "close", "tolerance": 1e-6},
        {"call": "lib.slug", "args": [""], "raises": "ValueError"},
        {"call": "lib.nothing", "args": [], "returns": None},
        {"run": ["python", "-c", "import lib, sys; print(lib.slug(sys.stdin.read()))"], "stdin": "A B", "stdout": "a-b\n"},
    ],
}
RIGHT = '''import math, re, unicodedata


def slug(text):
    if not text:
        raise ValueError("empty")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def parts(text):
    return text.split()


def root(n):
    return math.sqrt(n)


def nothing():
    return None
'''


def measure(tmp_path: Path, code_text: str, cases: dict[str, object] | None = None) -> sealed.SealedVerdict:
    code = tmp_path / "code"
    code.mkdir(exist_ok=True)
    (code / "lib.py").write_text(code_text)
    files = {"sealed/lib.json": load_cases(json.dumps(cases or CASES), "sealed/lib.json")}
    prepared = sealed.prepare(files, code, tmp_path / "run")
    try:
        outcomes = [run(request) for request in prepared.requests(env={"PATH": "/usr/bin:/bin"}, limits=None)]
    finally:
        prepared.close()
    return prepared.judge(outcomes)


def test_right_code_passes_every_kind_of_case(tmp_path: Path) -> None:
    verdict = measure(tmp_path, RIGHT)
    assert verdict.passed, verdict.reveal()
    assert len(verdict.results) == 7


def test_each_wrong_answer_fails_its_case_and_says_why_to_the_person(tmp_path: Path) -> None:
    wrong = RIGHT.replace('.strip("-")', "").replace("return text.split()", "return text.split() + ['c']") \
        .replace("return math.sqrt(n)", "return n / 2").replace('raise ValueError("empty")', "return ''")
    verdict = measure(tmp_path, wrong)
    assert not verdict.passed and not verdict.void
    assert verdict.failing == [f"sealed/lib.json#{n}" for n in range(1, 6)]
    assert "'-x-' where 'x' was expected" in verdict.why["sealed/lib.json#2"]
    assert "should raise ValueError" in verdict.why["sealed/lib.json#5"]


def test_the_run_never_holds_an_expected_value(tmp_path: Path) -> None:
    """Whatever the code reads of its process and its folder, the answers are not there: only the inputs came in."""
    spy = RIGHT + '''

def nothing():
    import os, sys
    seen = ""
    for folder, _dirs, names in os.walk(os.environ.get("TMPDIR", "/nonexistent") + "/.."):
        for name in names:
            try:
                seen += open(os.path.join(folder, name), errors="replace").read()
            except OSError:
                pass
    import gc
    seen += " ".join(repr(o) for o in gc.get_objects() if isinstance(o, (str, dict, list)))[:5_000_000]
    return "creme-brulee-co" in seen or "1.41421356" in seen
'''
    verdict = measure(tmp_path, spy)
    assert verdict.why.get("sealed/lib.json#6") == "a boolean (False) where null (None) was expected", verdict.why


def test_a_forged_report_buys_nothing_it_did_not_compute(tmp_path: Path) -> None:
    """Code that writes its own report lines (it holds the channel's descriptor) can only claim outputs, and a line for
    a case it was not given, or a second answer, voids the run."""
    forger = RIGHT.replace("def slug(text):", '''def slug(text):
    import json, os
    for fd in range(3, 64):
        try:
            os.write(fd, (json.dumps({"id": "not-a-case", "returns": "x"}) + "\\n").encode())
        except OSError:
            pass
    return "anything"


def _slug(text):''')
    verdict = measure(tmp_path, forger)
    assert verdict.void and not any(verdict.results.values()), verdict


def test_an_early_exit_measures_nothing(tmp_path: Path) -> None:
    verdict = measure(tmp_path, RIGHT.replace("def slug(text):", "def slug(text):\n    import os\n    os._exit(0)"))
    assert verdict.void.startswith("the runner ended before it finished")


def test_a_case_that_runs_out_of_its_time_limit_fails_alone(tmp_path: Path) -> None:
    cases = {"call": "lib.slug", "time_limit": 1, "cases": [{"args": ["a"], "returns": "a"}, {"args": ["b"], "returns": "b"}]}
    slow = RIGHT.replace("def slug(text):", "def slug(text):\n    import time\n    time.sleep(30 if text == 'a' else 0)")
    verdict = measure(tmp_path, slow, cases)
    assert verdict.results == {"sealed/lib.json#1": False, "sealed/lib.json#2": True}, verdict


@pytest.mark.parametrize(("expected", "claimed", "compare", "passes"), [
    (1, 1.0, "equal", False), (1, True, "equal", False), ([1, 2], [2, 1], "equal", False), ([1, 2], [2, 1], "unordered", True),
    ({"a": 1}, {"a": 1}, "equal", True), (0.3, 0.1 + 0.2, "close", True), (None, None, "equal", True)])
def test_json_typed_comparison(expected: object, claimed: object, compare: str, passes: bool) -> None:
    case = load_cases(json.dumps({"call": "m.f", "cases": [{"returns": expected, "compare": compare}]}), "x.json").cases[0]
    assert (judge(case, {"returns": claimed}) == "") is passes


@pytest.mark.parametrize(("text", "message"), [
    ('{"cases": [{"args": [1]}]}', "x.json: case 1: give exactly one of `returns`"),
    ('{"cases": [{"call": "m.f", "returns": 1, "compare": "fuzzy"}]}', "x.json: case 1: compare"),
    ('{"cases": [\n{"call": "m.f", "returns": 1},\n]}', "x.json:3: not JSON"),
    ('{"cases": [{"returns": 1}]}', "x.json: case 1: no `call`"),
    ('[1, 2]', "x.json:1: a file of sealed cases is an object"),
])
def test_a_bad_file_of_cases_is_refused_naming_where(text: str, message: str) -> None:
    with pytest.raises(CasesError, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_cases(text, "x.json")
