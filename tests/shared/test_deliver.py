"""banach deliver: the governed commits onto a branch of the user's repository (only forward, never onto a
checked-out branch), optionally with canon's conformance tests on top, and a summary of what each commit claims
and what certified it. Git runs hardened in the user's repository too: its hooks and config run nothing."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.helpers.workspaces import agent, cli, git

pytestmark = pytest.mark.xdist_group("test_deliver")  # one worker makes the module's run once, not once per worker


FILES_DOC = """---
area: files
---

## ST-1: file 1 exists
paths: file1.txt
tests: tests/test_files.py::test_file1

file1.txt holds "done".

## ST-2: file 2 exists
paths: file2.txt
checks:
  - test -f file2.txt

file2.txt exists.
"""
FILES_TEST = "from pathlib import Path\n\n\ndef test_file1():\n    assert Path('file1.txt').read_text() == 'done\\n'\n"


@pytest.fixture(scope="module")
def certified_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's repository, a workspace cloned from it, two requirements (one with a conformance test) made true
    by two governed commits, certified."""
    root = tmp_path_factory.mktemp("deliver")
    source = root / "src"
    source.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(source)], check=True)
    (source / "README.md").write_text("# a project\n")
    git(source, "add", "README.md")
    git(source, "commit", "-q", "-m", "a project")
    assert cli("banach", "init", str(root / "ws"), "--code", str(source)).returncode == 0
    config = root / "ws" / "banach.toml"
    text = config.read_text().replace('backend = "landlock"', 'backend = "none"')
    text = text.replace('agent = "claude"', 'agent = "scripted"')
    config.write_text(text + f'\n[agents.scripted]\npreset = "command"\ncommand = "{agent("partial.py")}"\n')
    (root / "files.md").write_text(FILES_DOC)
    (root / "test_files.py").write_text(FILES_TEST)
    added = cli("spec-loop", "add", "files.md", "test_files.py", "--workspace", str(root / "ws"), cwd=root)
    assert added.returncode == 0, added.stdout + added.stderr
    ran = cli("banach", "run", "--until-certified", "--workspace", str(root / "ws"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return root


@pytest.fixture
def copy(certified_template: Path, tmp_path: Path) -> Path:
    """The template copied (a copied workspace must work); deliver is pointed at the copy of the repository."""
    shutil.copytree(certified_template, tmp_path / "t", symlinks=True)
    return tmp_path / "t"


def deliver(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli("banach", "deliver", "--to", str(root / "src"), "--workspace", str(root / "ws"), *args)


def code_head(root: Path) -> str:
    return git(root / "ws" / "code", "rev-parse", "HEAD")


def test_the_governed_commits_land_on_a_new_branch_with_what_each_claims(copy: Path) -> None:
    result = deliver(copy)
    assert result.returncode == 0, result.stderr
    head, source = code_head(copy), copy / "src"
    lines = result.stdout.splitlines()
    base = git(source, "rev-parse", "main")
    assert lines[0] == (f"delivered 2 governed commit(s) to branch banach/result of {source} (now {head[:12]}; a new "
                        f"branch), on top of {base[:12]} (where the workspace was cloned from)")
    assert lines[1].split()[1].startswith("ST-1.") and "requirements ST-1  canon v1  iteration 1" in lines[1]
    assert lines[2].split()[1].startswith("ST-2.") and "requirements ST-2  canon v1  iteration 2" in lines[2]
    assert lines[3].startswith("certified: plan pass 3 found nothing open at canon v1 x code ")
    assert lines[3].endswith(f"{head[:12]} (2 of 2 requirements measured), which is the delivered code")
    assert git(source, "rev-parse", "banach/result") == head
    assert git(source, "rev-parse", "HEAD") == base and not git(source, "status", "--porcelain")  # left as it was
    again = deliver(copy)
    assert "(now " + head[:12] + "; unchanged: it already pointed there)" in again.stdout


def test_with_tests_adds_one_commit_carrying_canons_conformance_tests(copy: Path) -> None:
    result = deliver(copy, "--with-tests")
    assert result.returncode == 0, result.stderr
    source, head = copy / "src", code_head(copy)
    tip = git(source, "rev-parse", "banach/result")
    assert git(source, "rev-parse", "banach/result^") == head
    assert git(source, "show", "banach/result:tests/test_files.py") + "\n" == FILES_TEST
    assert git(source, "diff", "--name-only", head, tip) == "tests/test_files.py"
    assert "Banach-Conformance-Tests: tests/test_files.py" in git(source, "log", "-1", "--format=%B", tip)
    assert f"  {tip[:12]}  canon's conformance tests (canon v1): tests/test_files.py" in result.stdout
    again = deliver(copy, "--with-tests")  # the same tests on the same head: the branch stays
    assert again.returncode == 0 and git(source, "rev-parse", "banach/result") == tip
    without = deliver(copy)
    assert without.returncode == 1
    assert "(the tests commit of an earlier delivery: deliver --with-tests again to keep them on top)" in without.stderr


def test_a_branch_that_would_lose_commits_is_refused_unless_forced(copy: Path) -> None:
    source = copy / "src"
    git(source, "branch", "banach/result", "main")
    git(source, "switch", "-q", "banach/result")
    checked_out = deliver(copy)
    assert checked_out.returncode == 1 and "banach/result is checked out in" in checked_out.stderr
    git(source, "switch", "-q", "main")
    git(source, "commit", "-q", "--allow-empty", "-m", "mine")
    git(source, "branch", "-f", "banach/result", "main")
    mine = git(source, "rev-parse", "main")
    refused = deliver(copy)
    assert refused.returncode == 1
    assert (f"branch banach/result of {source} is at {mine[:12]}, which is not an ancestor of the result "
            f"{code_head(copy)[:12]}: moving it would drop commits") in refused.stderr
    assert git(source, "rev-parse", "banach/result") == mine
    forced = deliver(copy, "--force")
    assert forced.returncode == 0 and f"was {mine[:12]}" in forced.stdout
    assert git(source, "rev-parse", "banach/result") == code_head(copy)


def test_a_head_plan_has_not_certified_is_said_to_be_not_certified(copy: Path) -> None:
    code = copy / "ws" / "code"
    (code / "notes.txt").write_text("a person's note\n")
    git(code, "add", "notes.txt")
    git(code, "commit", "-q", "-m", "a note by hand")
    result = deliver(copy, "--branch", "review/banach")
    assert result.returncode == 3, result.stderr  # written, for review; not certified
    assert "(not made by build: no Banach-Item trailer)  a note by hand" in result.stdout
    head = code_head(copy)
    assert (f"NOT CERTIFIED: the code's head {head[:12]} is not the commit plan certified; the latest certificate is "
            "plan pass 3 at canon v1 x code ") in result.stdout
    assert git(copy / "src", "rev-parse", "review/banach") == head


def test_the_default_target_is_the_repository_the_workspace_was_cloned_from(certified_template: Path,
                                                                           tmp_path: Path) -> None:
    source = certified_template / "src"
    result = cli("banach", "deliver", "--branch", "default/target", cwd=certified_template / "ws" / "code")
    assert result.returncode == 0, result.stderr
    assert f"to branch default/target of {source} " in result.stdout
    git(source, "branch", "-q", "-D", "default/target")
    assert cli("banach", "init", str(tmp_path / "empty")).returncode == 0
    none = cli("banach", "deliver", "--workspace", str(tmp_path / "empty"))
    assert none.returncode == 1 and "there is no repository to deliver to: give one with --to REPO" in none.stderr


def test_hooks_and_config_of_the_users_repository_run_nothing(copy: Path) -> None:
    source = copy / "src"
    marker = copy / "ran"
    hook = source / ".git" / "hooks" / "reference-transaction"
    hook.write_text(f"#!/bin/sh\necho hook >> {marker}\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    monitor = copy / "fsmonitor.sh"
    monitor.write_text(f"#!/bin/sh\necho fsmonitor >> {marker}\n")
    monitor.chmod(monitor.stat().st_mode | stat.S_IXUSR)
    git(source, "config", "core.fsmonitor", str(monitor))
    result = deliver(copy, "--with-tests")
    assert result.returncode == 0, result.stderr
    assert not marker.exists(), marker.read_text()
    # the control: git as a person runs it in that repository does run them
    subprocess.run(["git", "-C", str(source), "update-ref", "refs/heads/control", "HEAD"], check=True,
                   env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"})
    assert "hook" in marker.read_text()
