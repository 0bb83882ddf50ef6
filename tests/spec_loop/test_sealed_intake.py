"""Sealed cases enter canon through spec-loop like any draft (issue 39): validated with the file, line or case named,
run once against the code (their answers shown to the person who wrote them, never journaled), required where a
requirement names them, and never exported to build."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from canon.store import CanonStore
from canon.visible import export_visible
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import cli, custom, git

DOC = """---
area: mathkit
title: Number utilities
---

## MK-1: digit_sum adds the decimal digits of a number
paths: mathkit/**
tests: tests/test_digits.py
{sealed}
digit_sum(n) returns the sum of the decimal digits of any non-negative integer n.
"""
TESTS = "from mathkit.digits import digit_sum\n\n\ndef test_small():\n    assert digit_sum(12) == 3\n"
CASES = {"call": "mathkit.digits.digit_sum", "cases": [{"args": [987654321], "returns": 45}, {"args": [0], "returns": 0},
                                                       {"args": [4096], "returns": 19}]}


def workspace(tmp_path: Path) -> Workspace:
    ws = custom(tmp_path, "---\narea: x\ntitle: X\n---\n\n## X-1: nothing\npaths: x.txt\nchecks:\n  - true\n\nHolds.\n",
                "good.py")
    (ws.code / "mathkit").mkdir()
    (ws.code / "mathkit" / "__init__.py").write_text("")
    (ws.code / "mathkit" / "digits.py").write_text("def digit_sum(n):\n    return sum(map(int, str(n))) if n else 0\n")
    git(ws.code, "add", "-A")
    git(ws.code, "commit", "-qm", "digits")
    return ws


def add(ws: Workspace, tmp_path: Path, files: dict[str, str]) -> tuple[int, str]:
    names = []
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
        names.append(name)
    done = cli("spec-loop", "add", *names, "--workspace", str(ws.root), cwd=tmp_path)
    return done.returncode, done.stdout + done.stderr


def test_sealed_cases_land_run_once_for_the_person_and_stay_out_of_builds_canon(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    code, said = add(ws, tmp_path, {"mathkit.md": DOC.format(sealed="sealed: sealed/digits.json"),
                                    "tests/test_digits.py": TESTS, "digits.json": json.dumps(CASES)})
    assert code == 0, said
    assert "MK-1 sealed cases: all 3 sealed cases pass" in said, said
    store = CanonStore(ws.canon)
    assert "sealed/digits.json" in store.files()
    seen = tmp_path / "exported"
    export_visible(store.git, store.head() or "", seen)  # what build gives its agents and sensors
    assert not (seen / "sealed").exists() and "sealed:" not in (seen / "requirements" / "mathkit.md").read_text()
    with Journal(ws.journal_path("spec"), readonly=True) as journal:
        assert "987654321" not in json.dumps([row.data for row in journal.rows()])
    status = cli("banach", "status", "--workspace", str(ws.root)).stdout
    assert "sealed cases: the code computed answers it never saw: MK-1" in status, status


def test_a_wrong_answer_is_shown_to_the_person_who_wrote_the_cases_and_not_refused(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    wrong = {**CASES, "cases": [*CASES["cases"], {"args": [99], "returns": 17}]}
    code, said = add(ws, tmp_path, {"mathkit.md": DOC.format(sealed="sealed: sealed/digits.json"),
                                    "tests/test_digits.py": TESTS, "digits.json": json.dumps(wrong)})
    assert code == 0, said
    assert "1 of 4 sealed cases do not pass" in said and "sealed/digits.json#4: 18 where 17 was expected" in said, said
    with Journal(ws.journal_path("spec"), readonly=True) as journal:
        assert "where 17 was expected" not in json.dumps([row.data for row in journal.rows()])


def test_bad_cases_and_a_missing_file_are_refused_naming_where(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    code, said = add(ws, tmp_path, {"mathkit.md": DOC.format(sealed="sealed: sealed/digits.json"),
                                    "tests/test_digits.py": TESTS, "digits.json": '{"cases": [\n{"args": [1]}\n]}'})
    assert code != 0 and "digits.json: case 1: give exactly one of `returns`" in said, said
    code, said = add(ws, tmp_path, {"mathkit.md": DOC.format(sealed="sealed: sealed/digits.json"),
                                    "tests/test_digits.py": TESTS})
    assert code != 0 and "sealed names sealed/digits.json, which is not among canon's sealed cases" in said, said


def test_a_requirement_without_sealed_cases_is_told_once_with_an_example(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    code, said = add(ws, tmp_path, {"mathkit.md": DOC.format(sealed=""), "tests/test_digits.py": TESTS})
    assert code == 0, said
    assert "MK-1 has no sealed cases" in said and '"call": "pkg.module.function"' in said, said
    code, said = add(ws, tmp_path, {"tests/test_digits.py": TESTS + "\n\ndef test_zero():\n    assert digit_sum(0) == 0\n"})
    assert code == 0 and "no sealed cases" not in said, said  # the requirement itself did not change: said once


def test_requires_sealed_withholds_the_certificate_until_every_requirement_has_them(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    doc = DOC.format(sealed="").replace("title: Number utilities\n", "title: Number utilities\nrequires: sealed\n")
    code, said = add(ws, tmp_path, {"mathkit.md": doc, "tests/test_digits.py": TESTS})
    assert code == 0, said
    out = cli("plan-loop", "certify", "--workspace", str(ws.root)).stdout
    assert "NOT CERTIFIED: canon requires sealed cases (requires: sealed) of MK-1, which have none" in out, out
    code, said = add(ws, tmp_path, {"mathkit.md": doc.replace("tests: tests/test_digits.py\n",
                                                              "tests: tests/test_digits.py\nsealed: sealed/digits.json\n"),
                                    "digits.json": json.dumps(CASES)})
    assert code == 0, said
    out = cli("plan-loop", "certify", "--workspace", str(ws.root)).stdout
    assert "CERTIFIED" in out.replace("NOT CERTIFIED", ""), out
    assert sys.executable  # the code's own interpreter measured it
