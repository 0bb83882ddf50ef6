"""Before work starts (issue 41): when a draft lands, `spec-loop add` says, once per requirement, what the tamper scan
already finds in the code its `paths:` match (file:line and what), with the `allows:` line that would accept it, so
a person knows before a turn is spent. Through the real executable, on the bundled example with a person's commit of
a module that has always read frames."""
from __future__ import annotations

from pathlib import Path

import pytest

from canon.store import CanonStore
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import cli, example, git

CALLER = '''"""Who called: the first frame outside this module."""
import sys


def caller():
    return sys._getframe(1).f_code.co_name
'''
DOC = """## EX-1: warnings name their caller
paths: textkit/caller.py
{allows}
`textkit.caller.caller()` names the function that called it.
"""


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    ws = example(tmp_path)
    (ws.code / "textkit" / "caller.py").write_text(CALLER)
    git(ws.code, "add", "textkit/caller.py")
    git(ws.code, "commit", "-qm", "a module that has always read frames")
    return ws


def add(ws: Workspace, tmp_path: Path, allows: str = "", title: str = "warnings name their caller") -> str:
    (tmp_path / "extras.md").write_text(DOC.format(allows=allows).replace("warnings name their caller", title))
    result = cli("spec-loop", "add", "extras.md", "--workspace", str(ws.root), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_the_code_a_requirement_owns_is_scanned_once_when_it_lands(ws: Workspace, tmp_path: Path) -> None:
    head = git(ws.code, "rev-parse", "HEAD")
    out = add(ws, tmp_path)
    assert "accepted extras.md as canon v2 (added EX-1)" in out, out
    assert (f"note: requirements/extras.md:1: EX-1: the code its paths match at {head[:12]} already has what the "
            "tamper scan looks for: textkit/caller.py:6: sys._getframe() (reads or traces other code's frames or "
            "namespaces)") in out, out
    assert "if EX-1's code is meant to, add `allows: frames` to it (requirements/extras.md:1)" in out, out
    assert out.count("tamper scan looks for") == 1  # one note per requirement, not one per hit
    with Journal(ws.journal_path("spec"), readonly=True) as journal:
        row = journal.last("draft.dry_run")
    assert row is not None and any("textkit/caller.py:6" in note for note in row.data["ran"]), row
    assert "tamper scan" not in add(ws, tmp_path, title="warnings say who called")  # said once: paths unchanged
    assert CanonStore(ws.canon).version() == 3


def test_a_requirement_that_allows_what_its_code_does_hears_nothing(ws: Workspace, tmp_path: Path) -> None:
    out = add(ws, tmp_path, allows="allows: frames\n")
    assert "accepted extras.md" in out and "tamper scan" not in out, out


def test_code_no_requirement_of_the_change_owns_is_not_reported(tmp_path: Path) -> None:
    ws = example(tmp_path)  # caller.py is not there: EX-1's paths match nothing yet
    out = add(ws, tmp_path)
    assert "accepted extras.md" in out and "tamper scan" not in out, out
