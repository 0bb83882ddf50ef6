"""`banach refresh` (issue 29, point 8): new commits of the user's repository reach the governed code between turns,
as a fast-forward, a clean merge, or, on a conflict, not at all."""
from __future__ import annotations

import subprocess
from pathlib import Path

from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import cli, git


def user_repository(root: Path) -> Path:
    source = root / "src"
    source.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(source)], check=True)
    commit(source, "README.md", "# a project\n", "a project")
    return source


def commit(repo: Path, name: str, text: str, message: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def workspace(root: Path, source: Path) -> Workspace:
    assert cli("banach", "init", str(root / "ws"), "--code", str(source)).returncode == 0
    return Workspace.open(root / "ws")


def refresh(ws: Workspace) -> subprocess.CompletedProcess[str]:
    return cli("banach", "refresh", "-w", str(ws.root))


def test_new_upstream_commits_fast_forward_the_code_and_are_journaled(tmp_path: Path) -> None:
    source = user_repository(tmp_path)
    ws = workspace(tmp_path, source)
    assert "nothing to bring in" in refresh(ws).stdout
    upstream = commit(source, "lib.py", "x = 1\n", "upstream work")
    done = refresh(ws)
    assert done.returncode == 0 and "moved forward to upstream" in done.stdout, done.stdout + done.stderr
    assert git(ws.code, "rev-parse", "HEAD") == upstream and (ws.code / "lib.py").read_text() == "x = 1\n"
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        row = journal.last("code.refreshed")
    assert row is not None and row.data["how"] == "fast-forward" and row.data["head"] == upstream


def test_governed_and_upstream_work_merge_and_a_conflict_changes_nothing(tmp_path: Path) -> None:
    source = user_repository(tmp_path)
    ws = workspace(tmp_path, source)
    governed = commit(ws.code, "governed.py", "y = 2\n", "what build kept")
    upstream = commit(source, "lib.py", "x = 1\n", "upstream work")
    done = refresh(ws)
    assert done.returncode == 0 and "merged with upstream" in done.stdout, done.stdout + done.stderr
    head = git(ws.code, "rev-parse", "HEAD")
    assert git(ws.code, "log", "-1", "--format=%P", head).split() == [governed, upstream]
    assert (ws.code / "lib.py").exists() and (ws.code / "governed.py").exists()
    commit(ws.code, "lib.py", "x = 'governed'\n", "build changed lib")
    before = git(ws.code, "rev-parse", "HEAD")
    commit(source, "lib.py", "x = 'upstream'\n", "upstream changed lib too")
    refused = refresh(ws)
    assert refused.returncode == 1 and "conflict in lib.py; nothing was changed" in refused.stderr, refused.stderr
    assert git(ws.code, "rev-parse", "HEAD") == before and (ws.code / "lib.py").read_text() == "x = 'governed'\n"
