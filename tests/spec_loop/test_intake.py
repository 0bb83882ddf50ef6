"""Intake: drafts become canon versions, or are refused by name with file:line, and canon stays put."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from canon.store import CanonStore
from shared.workspace import Workspace
from spec_loop.intake import take_inbox
from spec_loop.service import SpecService
from tests.helpers.workspaces import cli, example

NEW_DOC = """---
area: extras
---

## EX-1: reverse reverses
priority: 2
paths: textkit/reverse.py
checks:
  - python -c "from textkit.reverse import reverse; assert reverse('ab') == 'ba'"

`textkit.reverse.reverse(text)` returns the text backwards.
"""


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return example(tmp_path)


def intake(ws: Workspace) -> list[str]:
    service = SpecService(ws)
    try:
        return [d.describe() for d in take_inbox(service)]
    finally:
        service.close()


def test_accepted_draft_becomes_the_next_version(ws: Workspace) -> None:
    (ws.inbox / "extras.md").write_text(NEW_DOC)
    assert intake(ws) == ["accepted extras.md as canon v2 (added EX-1)"]
    store = CanonStore(ws.canon)
    assert store.version() == 2 and "EX-1" in store.load().requirements
    assert (ws.inbox / "accepted" / "v2-extras.md").exists() and not (ws.inbox / "extras.md").exists()
    log = cli("spec-loop", "log", "--workspace", str(ws.root)).stdout.splitlines()
    assert log[0].startswith("v2 ") and "added EX-1" in log[0]
    assert log[1].startswith("v1 ") and "added TK-1, TK-2, TK-3, TK-4, TK-5, TK-6" in log[1]


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("junk.md", bytes(range(256)), "junk.md:1: contains a NUL byte"),
    ("header.md", b"---\narea: x\n\n## EX-1: t\n\ntext\n", "header.md:1: the header opened with '---' is never closed"),
    ("empty.md", b"", "empty.md:1: the document is empty"),
    ("dup.md", b"## TK-1: slugify again\n\ntext\n", "dup.md:1: TK-1: duplicate id; it is already defined at requirements/textkit.md:"),
    ("cycle.md", b"## EX-1: a\ndepends_on: EX-2\n\nt\n\n## EX-2: b\ndepends_on: EX-1\n\nt\n",
     "cycle.md:1: EX-1: dependency cycle: EX-1 -> EX-2 -> EX-1"),
    ("notes.txt", b"hello", "notes.txt:1: canon holds requirement documents"),
    ("test_bad.py", b"def test_x(:\n", "test_bad.py:1: Python syntax error"),
])
def test_bad_drafts_are_refused_by_name_and_canon_does_not_move(ws: Workspace, name: str, content: bytes,
                                                                 expected: str) -> None:
    (ws.inbox / name).write_bytes(content)
    result = cli("spec-loop", "once", "--workspace", str(ws.root))
    assert result.returncode == 1
    assert expected in result.stdout
    assert CanonStore(ws.canon).version() == 1
    error = (ws.inbox / "rejected" / f"{name}.error").read_text()
    assert f"draft: {name}" in error and expected in error
    assert (ws.inbox / "rejected" / name).read_bytes() == content


def test_a_conformance_test_draft_joins_canon_tests(ws: Workspace) -> None:
    (ws.inbox / "test_reverse.py").write_text("from textkit.reverse import reverse\n\n\ndef test_reverse():\n    assert reverse('ab') == 'ba'\n")
    assert intake(ws) == ["accepted test_reverse.py as canon v2 (conformance tests tests/test_reverse.py)"]
    assert "tests/test_reverse.py" in CanonStore(ws.canon).load().test_files


def test_a_crash_between_writing_and_committing_leaves_canon_as_it_was(ws: Workspace) -> None:
    # The state a SIGKILL leaves mid-commit: the new file in canon's work tree, no commit, the draft still in the inbox.
    (ws.canon / "requirements" / "extras.md").write_text(NEW_DOC)
    (ws.inbox / "extras.md").write_text(NEW_DOC)
    store = CanonStore(ws.canon)
    assert store.version() == 1 and store.dirty()
    assert intake(ws) == ["accepted extras.md as canon v2 (added EX-1)"]
    assert store.version() == 2 and not store.dirty()
    from shared.journal import Journal

    with Journal(ws.journal_path("spec"), readonly=True) as journal:
        assert journal.last("recovered") is not None


def test_a_redelivered_draft_changes_nothing(ws: Workspace) -> None:
    (ws.inbox / "extras.md").write_text(NEW_DOC)
    intake(ws)
    (ws.inbox / "extras.md").write_text(NEW_DOC)
    assert intake(ws) == ["accepted extras.md: canon is already v2, nothing changed"]
    assert CanonStore(ws.canon).version() == 2


def test_concurrent_changes_are_serialized_and_none_is_lost(ws: Workspace, tmp_path: Path) -> None:
    drafts = []
    for index in range(4):
        path = tmp_path / f"area{index}.md"
        path.write_text(NEW_DOC.replace("EX-1", f"EX{index}-1").replace("reverse.py", f"r{index}.py"))
        drafts.append(path)
    procs = [subprocess.Popen([sys.executable, "-m", "spec_loop", "add", str(p), "--workspace", str(ws.root)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in drafts]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    store = CanonStore(ws.canon)
    assert store.version() == 5
    assert {f"EX{i}-1" for i in range(4)} <= set(store.load().requirements)
    assert sorted(e.version for e in store.history()) == [1, 2, 3, 4, 5]


def test_check_finds_hand_edits_outside_spec_loop(ws: Workspace) -> None:
    assert cli("spec-loop", "check", "--workspace", str(ws.root)).returncode == 0
    (ws.canon / "requirements" / "textkit.md").write_text("## TK-1: x\n\ny\n")
    result = cli("spec-loop", "check", "--workspace", str(ws.root))
    assert result.returncode == 1 and "files changed outside spec-loop: requirements/textkit.md" in result.stdout


def test_add_text_from_the_command_line(ws: Workspace) -> None:
    result = cli("spec-loop", "add", "--name", "extras.md", "--workspace", str(ws.root), "--", NEW_DOC)
    assert result.returncode == 0, result.stderr
    assert "canon v2" in result.stdout
    piped = cli("spec-loop", "add", "--name", "more.md", "--workspace", str(ws.root), "-",
                input=NEW_DOC.replace("EX-1", "EX-2").replace("reverse.py", "rev2.py"))
    assert piped.returncode == 0 and "canon v3" in piped.stdout


def test_add_reads_the_draft_from_stdin(ws: Workspace) -> None:
    result = cli("spec-loop", "add", "-", "--name", "extras.md", "--workspace", str(ws.root), input=NEW_DOC)
    assert result.returncode == 0, result.stderr
    assert "accepted extras.md as canon v2 (added EX-1)" in result.stdout
