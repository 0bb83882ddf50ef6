"""The README's path for a person's own repository: clone it into a workspace, write a requirement, let an agent
(here a one-line shell program, through --agent-command) satisfy it, certify, and fetch the governed commit back."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.helpers.workspaces import cli, git

REQUIREMENT = f"""## HELLO-1: hello returns 1
paths: hello.py
checks:
  - {sys.executable} -c "import hello; assert hello.hello() == 1"

`hello.hello()` returns 1.
"""
AGENT = "sh -c 'printf \"def hello():\\n    return 1\\n\" > hello.py'"


def own_repository(folder: Path) -> Path:
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    (folder / "README.md").write_text("# my project\n")
    git(folder, "add", "README.md")
    git(folder, "commit", "-q", "-m", "my first commit")
    return folder


def test_a_cloned_repository_is_changed_certified_and_fetched_back(tmp_path: Path) -> None:
    mine = own_repository(tmp_path / "mine")
    made = cli("banach", "init", "ws", "--code", "mine", cwd=tmp_path)  # relative to where the person stands
    assert made.returncode == 0, made.stderr
    ws = tmp_path / "ws"
    assert git(ws / "code", "rev-parse", "HEAD") == git(mine, "rev-parse", "HEAD")
    (tmp_path / "req.md").write_text(REQUIREMENT)
    steps = [("spec-loop", "add", str(tmp_path / "req.md")), ("plan-loop", "once"),
             ("build-loop", "once", "--agent-command", AGENT), ("plan-loop", "certify")]
    outputs = []
    for program, *args in steps:
        result = cli(program, *args, "--workspace", str(ws))
        assert result.returncode == 0, result.stdout + result.stderr
        outputs.append(result.stdout)
    assert "plan pass 1: canon v1" in outputs[1] and "residual 1" in outputs[1]
    assert "keep: failing 1 -> 0" in outputs[2]
    assert "plan pass 2: canon v1" in outputs[3] and "CERTIFIED" in outputs[3]
    status = cli("banach", "status", "--workspace", str(ws))
    assert f"last turn   command: {AGENT}" in status.stdout
    assert json.loads(cli("banach", "status", "--json", "--workspace", str(ws)).stdout)["certified"] is True

    git(mine, "fetch", "-q", str(ws / "state" / "build" / "code.git"), "main")
    trailers = git(mine, "log", "-1", "--format=%an|%(trailers:key=Banach-Item,valueonly)", "FETCH_HEAD")
    assert trailers.startswith("banach-build|HELLO-1.")
    assert git(mine, "show", "FETCH_HEAD:hello.py") == "def hello():\n    return 1"


def test_init_names_what_cannot_be_cloned(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    result = cli("banach", "init", str(tmp_path / "ws"), "--code", str(tmp_path / "plain"))
    assert result.returncode == 1 and f"{tmp_path / 'plain'} is not a git repository" in result.stderr
    assert "git init" in result.stderr
    assert not (tmp_path / "ws").exists()  # nothing half-made is left, not even the folder
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    result = cli("banach", "init", str(tmp_path / "ws"), "--code", str(empty))
    assert result.returncode == 1 and "has no commits yet" in result.stderr
