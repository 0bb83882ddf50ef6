"""Held-back tests through spec-loop and plan (issue 24): where canon keeps them, what spec's records say of them,
what build's export of canon holds, and what plan's fix_plan, journal and memo say of their runs. Real canon and code
repositories, the real dry run and plan pass. The red team's side is tests/redteam/test_held_back.py."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from canon.store import CanonStore
from canon.visible import export_visible, without_held_back
from plan_loop.passes import PlanService
from shared.app.init import init_workspace
from shared.journal import Journal
from shared.workspace import Workspace
from spec_loop.draft import Draft
from spec_loop.service import SpecService
from tests.helpers.workspaces import land

DOC = """## MK-1: digit_sum adds the decimal digits of a number
paths: mathkit/**
tests: tests/test_digits.py
{held}
digit_sum(n) returns the sum of the decimal digits of any non-negative integer n.
"""
VISIBLE = "from mathkit.digits import digit_sum\n\n\ndef test_small():\n    assert digit_sum(12) == 3\n"
HIDDEN = "from mathkit.digits import digit_sum\n\n\ndef test_zx44_nines():\n    assert digit_sum(999) == 27\n"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    made = init_workspace(tmp_path / "ws", example=False)
    made.config_file.write_text(made.config_file.read_text().replace('backend = "landlock"', 'backend = "none"'))
    return Workspace.open(made.root)


def with_held_back(ws: Workspace) -> str:
    return land(ws, {"requirements/mathkit.md": DOC.format(held="held_back: tests/test_digits_edges.py\n"),
                     "tests/test_digits.py": VISIBLE, "tests/test_digits_edges.py": HIDDEN})


def spec_rows(ws: Workspace) -> str:
    with Journal(ws.journal_path("spec"), readonly=True) as journal:
        return "\n".join(json.dumps(row.data) for row in journal.rows())


def test_a_held_back_test_lands_apart_and_no_record_build_reads_names_it(ws: Workspace) -> None:
    said = with_held_back(ws)
    assert said == ("accepted mathkit.md, test_digits.py, a held-back test as canon v1 (added MK-1; conformance tests "
                    "tests/test_digits.py; held-back tests of MK-1)")
    canon = CanonStore(ws.canon)
    assert sorted(canon.files()) == ["held_back/tests/test_digits_edges.py", "requirements/mathkit.md",
                                     "tests/test_digits.py"]
    assert canon.load().requirements["MK-1"].held_back == ("tests/test_digits_edges.py",)
    log = canon.git.log("%B")
    assert "test_digits_edges" not in log and "zx44" not in log, log  # build reads canon's history
    assert "test_digits_edges" not in spec_rows(ws) and "zx44" not in spec_rows(ws)


def test_builds_export_of_canon_has_neither_the_tests_nor_the_lines_naming_them(ws: Workspace, tmp_path: Path) -> None:
    with_held_back(ws)
    canon = CanonStore(ws.canon)
    export_visible(canon.git, canon.head() or "", tmp_path / "seen")
    files = sorted(str(p.relative_to(tmp_path / "seen")) for p in (tmp_path / "seen").rglob("*") if p.is_file())
    assert files == ["requirements/mathkit.md", "tests/test_digits.py"]
    document = (tmp_path / "seen" / "requirements" / "mathkit.md").read_text()
    assert "held_back" not in document and "digit_sum(n) returns" in document and "tests: tests/test_digits.py" in document
    listed = "## A-1: t\nheld_back:\n  - tests/test_a.py\n  - tests/test_b.py\npaths: a.py\n\nText.\n"
    assert without_held_back(listed) == "## A-1: t\npaths: a.py\n\nText.\n"


def test_one_file_cannot_be_both_visible_and_held_back(ws: Workspace) -> None:
    spec = SpecService(ws)
    doc = DOC.format(held="held_back: tests/test_digits.py\n")
    with spec.locked():
        decision = spec.decide_change([Draft("mathkit.md", "requirements/mathkit.md", doc.encode()),
                                       Draft("test_digits.py", "tests/test_digits.py", VISIBLE.encode())], source="test")
    spec.close()
    assert not decision.accepted
    assert any("held_back names tests/test_digits.py, which MK-1 names under tests:" in p for p in decision.problems)


def test_moving_a_test_between_the_fields_moves_its_file_and_removing_the_requirement_removes_it(ws: Workspace) -> None:
    with_held_back(ws)
    canon = CanonStore(ws.canon)
    both = DOC.replace("tests: tests/test_digits.py\n", "tests: tests/test_digits.py, tests/test_digits_edges.py\n")
    land(ws, {"requirements/mathkit.md": both.format(held="")})
    assert sorted(canon.files()) == ["requirements/mathkit.md", "tests/test_digits.py", "tests/test_digits_edges.py"]
    land(ws, {"requirements/mathkit.md": DOC.format(held="held_back: tests/test_digits_edges.py\n")})
    assert "held_back/tests/test_digits_edges.py" in canon.files() and "tests/test_digits_edges.py" not in canon.files()
    land(ws, {"requirements/other.md": "---\nremoves: MK-1\n---\n"})
    assert sorted(canon.files()) == []


def test_a_held_back_test_that_cannot_run_is_refused_with_its_output_shown_but_not_journaled(ws: Workspace) -> None:
    broken = "import zx44_no_such_package\n\n\ndef test_zx44():\n    assert True\n"
    spec = SpecService(ws)
    doc = DOC.format(held="held_back: tests/test_digits_edges.py\n")
    with spec.locked():
        decision = spec.decide_change([Draft("mathkit.md", "requirements/mathkit.md", doc.encode()),
                                       Draft("test_digits.py", "tests/test_digits.py", VISIBLE.encode()),
                                       Draft("test_digits_edges.py", "tests/test_digits_edges.py", broken.encode())],
                                      source="test")
    spec.close()
    assert not decision.accepted
    shown = "\n".join(decision.problems)
    assert "its held-back tests (tests/test_digits_edges.py) cannot run at all" in shown and "zx44" in shown, shown
    rows = spec_rows(ws)
    assert "its held-back tests cannot run at all" in rows and "zx44" not in rows, rows


def test_plan_runs_them_and_says_one_bit_and_a_count(ws: Workspace) -> None:
    with_held_back(ws)
    (ws.code / "mathkit").mkdir()
    (ws.code / "mathkit" / "__init__.py").write_text("")
    (ws.code / "mathkit" / "digits.py").write_text("def digit_sum(n):\n    return {12: 3}.get(n)\n")
    from tests.helpers.workspaces import git

    git(ws.code, "add", "-A")
    git(ws.code, "commit", "-qm", "a lookup table")
    service = PlanService(Workspace.open(ws.root))
    try:
        [report] = service.measure()
        again = service.run_pass()  # memoized: the same words come back from the memo
    finally:
        service.close()
    assert report.residual == 1 and not report.certified and again.checks_memoized == 2
    plan = json.loads(ws.fix_plan_json.read_text())
    [item] = plan["items"]
    assert item["evidence"] == [{"check": "held-back tests", "exit_code": None, "timed_out": False,
                                 "excerpt": "1 of 1 held-back tests do not pass",
                                 "fingerprint": item["evidence"][0]["fingerprint"]}]
    with Journal(ws.journal_path("plan"), readonly=True) as journal:
        row = journal.last("pass")
    assert row is not None and row.data["held_back"] == {"requirements": 1, "failing": ["MK-1"], "only": ["MK-1"]}
    stores = [p for p in ws.role_dir("plan").rglob("*") if p.is_file() and not p.is_relative_to(ws.role_dir("plan") /
                                                                                                  "scratch")]
    stores += [ws.fix_plan_json, ws.fix_plan_md]
    assert not [p for p in stores if b"zx44" in p.read_bytes() or b"test_digits_edges" in p.read_bytes()]
    memo = next(p for p in ws.role_dir("plan").rglob("*.db") if "memo" in p.name or "journal" not in p.name)
    with sqlite3.connect(memo) as db:
        text = json.dumps([list(map(str, r)) for t in db.execute("select name from sqlite_master where type='table'")
                           for r in db.execute(f"select * from {t[0]}")])
    assert "1 of 1 held-back tests do not pass" in text
