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
TESTED_DOC = """## EX-1: reverse reverses
paths: textkit/reverse.py
tests: tests/{test}::test_reverse

`textkit.reverse.reverse(text)` returns the text backwards.
"""
REVERSE_TEST = "from textkit.reverse import reverse\n\n\ndef test_reverse():\n    assert reverse('ab') == 'ba'\n"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return example(tmp_path)


def intake(ws: Workspace) -> list[str]:
    service = SpecService(ws)
    try:
        decision = take_inbox(service)
        return [] if decision is None else [decision.describe()]
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
    ("dup.md", b"## TK-1: slugify again\n\ntext\n",
     "dup.md:1: TK-1: duplicate id; it is already defined at requirements/textkit.md:"),
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


def test_a_conformance_test_no_requirement_names_is_refused(ws: Workspace) -> None:
    (ws.inbox / "test_reverse.py").write_text(REVERSE_TEST)
    assert intake(ws) and CanonStore(ws.canon).version() == 1
    error = (ws.inbox / "rejected" / "test_reverse.py.error").read_text()
    assert "test_reverse.py:1: no requirement names this conformance test in its `tests:`" in error, error
    (ws.inbox / "rejected" / "test_reverse.py").rename(ws.inbox / "test_reverse.py")
    (ws.inbox / "extras.md").write_text(TESTED_DOC.format(test="test_reverse.py"))
    assert intake(ws) == ["accepted extras.md, test_reverse.py as canon v2 (added EX-1; conformance tests "
                          "tests/test_reverse.py)"]
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



@pytest.mark.parametrize(("document", "test"), [("aa.md", "test_zz.py"), ("zz.md", "test_aa.py")])
def test_a_requirement_and_its_tests_dropped_together_land_as_one_version(ws: Workspace, document: str,
                                                                          test: str) -> None:
    (ws.inbox / document).write_text(TESTED_DOC.format(test=test))
    (ws.inbox / test).write_text(REVERSE_TEST)
    result = cli("spec-loop", "once", "--workspace", str(ws.root))
    assert result.returncode == 0, result.stdout + result.stderr
    names = ", ".join(sorted([document, test]))
    assert f"accepted {names} as canon v2 (added EX-1; conformance tests tests/{test})" in result.stdout
    store = CanonStore(ws.canon)
    assert [entry.version for entry in store.history()] == [2, 1]  # one commit, one Canon-Version
    assert {f"requirements/{document}", f"tests/{test}"} <= set(store.git.diff_names("HEAD~1", "HEAD"))
    assert sorted(p.name for p in (ws.inbox / "accepted").iterdir()) == sorted([f"v2-{document}", f"v2-{test}"])
    log = cli("spec-loop", "log", "--workspace", str(ws.root)).stdout.splitlines()
    assert log[0].startswith("v2 ") and log[0].endswith(f"added EX-1; conformance tests tests/{test}")


def test_a_refused_change_moves_nothing_and_each_file_says_what_is_wrong(ws: Workspace) -> None:
    (ws.inbox / "extras.md").write_text(TESTED_DOC.format(test="test_extras.py").replace("tests:", "colour: red\ntests:"))
    (ws.inbox / "test_extras.py").write_text("def test_reverse(:\n")
    result = cli("spec-loop", "once", "--workspace", str(ws.root))
    assert result.returncode == 1
    assert "refused extras.md, test_extras.py (one change: none of it landed, canon stays at v1" in result.stdout
    assert "extras.md:3: unknown field 'colour'" in result.stdout
    assert "test_extras.py:1: Python syntax error" in result.stdout
    assert CanonStore(ws.canon).version() == 1 and not list((ws.inbox / "accepted").iterdir())
    error = (ws.inbox / "rejected" / "extras.md.error").read_text()
    own, elsewhere = error.split("elsewhere in this change:")
    assert "draft: extras.md" in own and "extras.md:3: unknown field 'colour'" in own
    assert "test_extras.py:1: Python syntax error" in elsewhere
    assert "What to do: fix what is named above, then move every file of this change from inbox/rejected/ back " \
           "into inbox/ at once" in elsewhere
    assert "test_extras.py:1: Python syntax error" in (ws.inbox / "rejected" / "test_extras.py.error").read_text()


def test_a_sound_draft_is_refused_with_its_change_and_says_why(ws: Workspace) -> None:
    (ws.inbox / "extras.md").write_text(TESTED_DOC.format(test="test_extras.py").replace("::test_reverse", "::test_nope"))
    (ws.inbox / "test_extras.py").write_text(REVERSE_TEST)
    assert intake(ws)[0].startswith("refused extras.md, test_extras.py")
    error = (ws.inbox / "rejected" / "test_extras.py.error").read_text()
    assert "test_extras.py: no problem found in this file; it was refused with the rest of its change" in error
    assert ("extras.md:1: EX-1: tests names tests/test_extras.py::test_nope, but tests/test_extras.py defines no "
            "test_nope") in error
    assert CanonStore(ws.canon).version() == 1


def test_a_broken_test_does_not_hide_the_problems_of_its_requirement(ws: Workspace) -> None:
    doc = TESTED_DOC.format(test="test_extras.py").replace("\n\n", "\nchecks:\n  - python scripts/check_reverse.py\n\n", 1)
    (ws.inbox / "extras.md").write_text(doc)
    (ws.inbox / "test_extras.py").write_text("def test_reverse(:\n")
    said = intake(ws)[0]
    assert "test_extras.py:1: Python syntax error" in said
    assert "extras.md:5: EX-1: checks names scripts/check_reverse.py, which is neither in the code" in said
    own = (ws.inbox / "rejected" / "extras.md.error").read_text().split("elsewhere in this change:")[0]
    assert "extras.md:5: EX-1: checks names scripts/check_reverse.py" in own


def test_a_requirement_without_its_test_says_how_to_add_both(ws: Workspace, tmp_path: Path) -> None:
    (ws.inbox / "extras.md").write_text(TESTED_DOC.format(test="test_extras.py"))
    refused = cli("spec-loop", "once", "--workspace", str(ws.root))
    assert refused.returncode == 1
    assert ("extras.md:1: EX-1: tests names tests/test_extras.py, which is not among canon's conformance tests; put "
            "test_extras.py in the inbox together with extras.md (both land as one canon version), or run: "
            "spec-loop add extras.md test_extras.py") in refused.stdout
    (tmp_path / "extras.md").write_text(TESTED_DOC.format(test="test_extras.py"))
    (tmp_path / "test_extras.py").write_text(REVERSE_TEST)
    added = cli("spec-loop", "add", "extras.md", "test_extras.py", "--workspace", str(ws.root), cwd=tmp_path)
    assert added.returncode == 0, added.stdout + added.stderr
    assert "accepted extras.md, test_extras.py as canon v2 (added EX-1; conformance tests tests/test_extras.py)" in added.stdout
    assert CanonStore(ws.canon).version() == 2


def test_two_drafts_for_one_canon_file_are_refused(ws: Workspace) -> None:
    from spec_loop.draft import Draft

    service = SpecService(ws)
    with service.locked():
        decision = service.decide_change([Draft("x.md", "requirements/x.md", NEW_DOC.encode()),
                                          Draft("requirements/x.md", "requirements/x.md", NEW_DOC.encode())], source="test")
    service.close()
    assert decision.problems == ("x.md:1: requirements/x.md in the same change lands at requirements/x.md too; "
                                 "keep one of them",)
    assert CanonStore(ws.canon).version() == 1


def test_add_refuses_a_missing_file_among_several(ws: Workspace, tmp_path: Path) -> None:
    (tmp_path / "extras.md").write_text(NEW_DOC)
    result = cli("spec-loop", "add", "extras.md", "test_gone.py", "--workspace", str(ws.root), cwd=tmp_path)
    assert result.returncode == 2 and "test_gone.py: no such file" in result.stderr
    assert CanonStore(ws.canon).version() == 1


CHECKED_DOC = """## EX-1: reverse reverses
paths: textkit/reverse.py
checks:
  - {check}

`textkit.reverse.reverse(text)` returns the text backwards.
"""


def test_a_check_naming_a_file_the_code_lacks_is_refused_until_the_code_has_it(ws: Workspace) -> None:
    from tests.helpers.workspaces import git

    (ws.inbox / "extras.md").write_text(CHECKED_DOC.format(check="python scripts/check_reverse.py --strict"))
    refused = cli("spec-loop", "once", "--workspace", str(ws.root))
    assert refused.returncode == 1
    assert ("extras.md:4: EX-1: checks names scripts/check_reverse.py, which is neither in the code (at its current "
            "commit) nor among canon's files; add it to the code, or make it a conformance test") in refused.stdout
    assert CanonStore(ws.canon).version() == 1
    # the work tree is the agent's: what counts is the code's current commit, looked up by name, never read
    (ws.code / "scripts").mkdir()
    (ws.code / "scripts" / "check_reverse.py").write_text("raise SystemExit(0)\n")
    os_replace_back(ws, "extras.md")
    assert "scripts/check_reverse.py, which is neither" in cli("spec-loop", "once", "--workspace", str(ws.root)).stdout
    git(ws.code, "add", "scripts/check_reverse.py")
    git(ws.code, "commit", "-q", "-m", "a check script")
    os_replace_back(ws, "extras.md")
    accepted = cli("spec-loop", "once", "--workspace", str(ws.root))
    assert accepted.returncode == 0 and "accepted extras.md as canon v2" in accepted.stdout


@pytest.mark.parametrize("check", [
    "python -m pytest -q tests/test_smoke.py::test_x",  # in the code
    "python -m pytest -q tests/",  # a folder of the code
    "test -f textkit/reverse.py && python textkit/reverse.py",  # missing, but the requirement's paths grant it
    "python -m pytest -q 'tests/test_*.py' -k reverse -p no:cacheprovider",  # a glob and options
])
def test_checks_naming_what_exists_or_may_be_made_are_accepted(ws: Workspace, check: str) -> None:
    (ws.inbox / "extras.md").write_text(CHECKED_DOC.format(check=check))
    assert intake(ws) == ["accepted extras.md as canon v2 (added EX-1)"]


def os_replace_back(ws: Workspace, name: str) -> None:
    """Move a refused draft back into the inbox, as a person does after fixing what the .error said."""
    (ws.inbox / "rejected" / name).replace(ws.inbox / name)
    (ws.inbox / "rejected" / f"{name}.error").unlink()
