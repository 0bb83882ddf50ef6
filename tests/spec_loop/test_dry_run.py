"""The dry run at intake: a change's new checks and conformance tests run once against the code's current commit,
as plan runs them. One that cannot run at all is refused with its output and the requirement's file:line; one
that runs and fails is accepted (it is the residual build works on)."""
from __future__ import annotations

from pathlib import Path

import pytest

from canon.store import CanonStore
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import cli, example, git

CHECKED = """## EX-1: reverse reverses
paths: {paths}
checks:
  - {check}

`textkit.reverse.reverse(text)` returns the text backwards.
"""
TESTED = """## EX-1: reverse reverses
paths: textkit/reverse.py
tests: tests/test_extras.py::test_reverse

`textkit.reverse.reverse(text)` returns the text backwards.
"""


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return example(tmp_path)


def add(ws: Workspace, tmp_path: Path, document: str, test: str | None = None) -> tuple[int, str]:
    (tmp_path / "extras.md").write_text(document)
    files = ["extras.md"]
    if test is not None:
        (tmp_path / "test_extras.py").write_text(test)
        files.append("test_extras.py")
    result = cli("spec-loop", "add", *files, "--workspace", str(ws.root), cwd=tmp_path)
    return result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize(("check", "paths", "said"), [
    ("mi-selftest --strict", "textkit/reverse.py", "mi-selftest: command not found (exit 127)"),
    ("python -c \"open('data/table.json')\"", "textkit/reverse.py", "it names data/table.json, which does not exist"),
    ("./tools/check.sh", "textkit/reverse.py, tools/*.sh", ""),  # not found, but build may create it
    ("python -c \"from textkit.reverse import reverse\"", "textkit/reverse.py", ""),  # runs and fails: the residual
], ids=["not-installed", "missing-file", "program-build-may-create", "runs-and-fails"])
def test_a_check_that_cannot_run_is_refused_one_that_fails_is_accepted(ws: Workspace, tmp_path: Path, check: str,
                                                                       paths: str, said: str) -> None:
    code, out = add(ws, tmp_path, CHECKED.format(check=check, paths=paths))
    head = git(ws.code, "rev-parse", "HEAD")
    if said:
        assert code == 1, out
        assert (f"extras.md:4: EX-1: the check `{check}` cannot run at all against the code at {head[:12]}: {said}. "
                in out)
        assert "Its output:\n      | " in out
        assert CanonStore(ws.canon).version() == 1
    else:
        assert code == 0, out
        assert f"dry run at code {head[:12]}: EX-1 '{check}' runs and fails (the residual build will work on)" in out
        assert "accepted extras.md as canon v2 (added EX-1)" in out


@pytest.mark.parametrize(("test", "said"), [
    ("import hypothesis_nowhere\n\n\ndef test_reverse():\n    assert True\n",
     "pytest cannot collect tests/test_extras.py: it imports hypothesis_nowhere, which is not installed, not in the "
     "code, and not a path EX-1 lets build create (paths: textkit/reverse.py)"),
    ("REVERSED = reversed_text('ab')\n\n\ndef test_reverse():\n    assert REVERSED == 'ba'\n",
     "pytest cannot collect tests/test_extras.py: NameError: name 'reversed_text' is not defined, raised in the test "
     "file itself (tests/test_extras.py)"),
    ("import pytest\n\n\n@pytest.mark.skip('later')\ndef test_reverse():\n    assert True\n",
     "no tests ran: all of its tests were skipped or not collected"),
    ("from textkit.reverse import reverse\n\n\ndef test_reverse():\n    assert reverse('ab') == 'ba'\n", ""),
], ids=["module-not-installed", "error-in-the-test", "all-skipped", "code-lacks-what-it-tests"])
def test_a_conformance_test_that_cannot_run_is_refused(ws: Workspace, tmp_path: Path, test: str, said: str) -> None:
    code, out = add(ws, tmp_path, TESTED, test)
    head = git(ws.code, "rev-parse", "HEAD")
    if said:
        assert code == 1, out
        assert (f"extras.md:1: EX-1: its conformance tests (tests/test_extras.py::test_reverse) cannot run at all against "
                f"the code at {head[:12]}: {said}") in out
        assert "test_extras.py: no problem found" not in out and CanonStore(ws.canon).version() == 1
        assert "canary" not in out.lower()  # Banach's own must-fail test is left out of what a person reads
    else:  # the code lacks textkit.reverse: that is what build is for
        assert code == 0, out
        assert f"dry run at code {head[:12]}: EX-1 conformance tests runs and fails" in out


def test_only_new_checks_are_tried_and_what_ran_is_journaled(ws: Workspace, tmp_path: Path) -> None:
    code, out = add(ws, tmp_path, CHECKED.format(check="test -f textkit/reverse.py", paths="textkit/reverse.py"))
    assert code == 0 and "dry run at code" in out
    reworded = CHECKED.format(check="test -f textkit/reverse.py", paths="textkit/reverse.py").replace("backwards", "reversed")
    code, out = add(ws, tmp_path, reworded)
    assert code == 0 and "dry run" not in out and "canon v3 (changed EX-1)" in out
    with Journal(ws.journal_path("spec"), readonly=True) as journal:
        rows = journal.rows("draft.dry_run")
    assert len(rows) == 1 and rows[0].data["refused"] == 0 and "EX-1 'test -f textkit/reverse.py'" in rows[0].data["ran"][0]


def test_a_refused_inbox_drop_files_the_output_in_its_error(ws: Workspace) -> None:
    (ws.inbox / "extras.md").write_text(CHECKED.format(check="mi-selftest", paths="textkit/reverse.py"))
    result = cli("spec-loop", "once", "--workspace", str(ws.root))
    assert result.returncode == 1
    error = (ws.inbox / "rejected" / "extras.md.error").read_text()
    assert "extras.md:4: EX-1: the check `mi-selftest` cannot run at all" in error and "not found" in error


@pytest.mark.landlock
@pytest.mark.parametrize("backend", ["landlock", "none"])  # none: the control, where nothing holds the code back
def test_the_code_run_by_a_dry_run_cannot_write_canon_or_the_inbox(tmp_path: Path, backend: str) -> None:
    ws = example(tmp_path, backend=backend)
    planted = ("from pathlib import Path\n"
               "root = next(p for p in Path(__file__).resolve().parents if (p / 'banach.toml').exists())\n"
               "for target in (root / 'canon' / 'requirements' / 'planted.md', root / 'inbox' / 'planted.md'):\n"
               "    try:\n        target.write_text('## EV-1: planted\\n\\nx\\n')\n        print('WROTE', target)\n"
               "    except OSError as exc:\n        print('DENIED', target, exc.strerror)\n")
    (ws.code / "textkit" / "evil.py").write_text(planted)
    git(ws.code, "add", "textkit/evil.py")
    git(ws.code, "commit", "-q", "-m", "what an agent might have left")
    code, out = add(ws, tmp_path, CHECKED.format(check="python -c 'import textkit.evil; raise SystemExit(1)'",
                                                 paths="textkit/reverse.py"))
    assert code == 0, out
    planted_anywhere = (ws.canon / "requirements" / "planted.md").exists() or (ws.inbox / "planted.md").exists()
    assert planted_anywhere == (backend == "none")
    assert CanonStore(ws.canon).version() == 2
