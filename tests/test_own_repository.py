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


def test_init_writes_a_real_agent_your_own_program_and_the_projects_tests_as_a_sensor(tmp_path: Path) -> None:
    """Issue 43: init wrote `agent = "sim"` and a comment pointing into site-packages; now a real preset through the
    gateway, the `command` preset for a program of one's own, and the project's own tests as a sensor."""
    import tomllib

    mine = own_repository(tmp_path / "mine")
    (mine / "tests").mkdir()
    (mine / "tests" / "test_readme.py").write_text("def test_it():\n    assert True\n")
    git(mine, "add", "tests")
    git(mine, "commit", "-q", "-m", "a test")
    assert cli("banach", "init", str(tmp_path / "ws"), "--code", str(mine)).returncode == 0
    text = (tmp_path / "ws" / "banach.toml").read_text()
    config = tomllib.loads(text)
    assert config["build"]["agent"] == "claude"
    assert config["agents"]["claude"] == {"preset": "claude", "model": "claude-sonnet-4-5", "provider": "anthropic"}
    assert config["gateway"]["providers"]["anthropic"]["wire"] == "anthropic"
    assert config["agents"]["mine"]["preset"] == "command"
    (sensor,) = config["build"]["sensors"]
    assert sensor["kind"] == "pytest" and sensor["command"].endswith(" tests") and "$BANACH_PYTHON" in sensor["command"]
    assert "docs/agents.md" in text and "shared/config.py" not in text and "build-loop key set anthropic" in text
    assert sum(line.startswith("#") for line in text.splitlines()) >= 15  # commented for a person
    doctor = cli("banach", "doctor", "-w", str(tmp_path / "ws")).stdout
    assert "FIX   gateway provider anthropic: no key" in doctor and "build-loop key set anthropic" in doctor
    (tmp_path / "ws" / "banach.toml").write_text(text.replace('agent = "claude"', 'agent = "mine"'))
    doctor = cli("banach", "doctor", "-w", str(tmp_path / "ws")).stdout  # a provider no rung uses needs no key yet
    assert "ok    gateway provider anthropic: no key, and no rung of build.agent or build.ladder uses it now" in doctor
    bare = cli("banach", "init", str(tmp_path / "bare"))  # no code, so no tests to sense: the sensor is commented
    assert bare.returncode == 0 and "build" in tomllib.loads((tmp_path / "bare" / "banach.toml").read_text())
    assert "sensors" not in tomllib.loads((tmp_path / "bare" / "banach.toml").read_text())["build"]


def test_up_and_run_refuse_the_simulated_agent_outside_the_example_and_name_the_fix(tmp_path: Path) -> None:
    """Issue 43: `banach run` and `banach up` started the SIMULATED agent on a repository that was not the example;
    five stalls later the advice was 'raise --max-turns'."""
    own_repository(tmp_path / "mine")
    assert cli("banach", "init", str(tmp_path / "ws"), "--code", str(tmp_path / "mine")).returncode == 0
    config = tmp_path / "ws" / "banach.toml"
    config.write_text(config.read_text().replace('agent = "claude"', 'agent = "sim"') + '\n[agents.sim]\npreset = "sim"\n')
    (tmp_path / "req.md").write_text(REQUIREMENT)
    assert cli("spec-loop", "add", str(tmp_path / "req.md"), "-w", str(tmp_path / "ws")).returncode == 0
    for command in (["run", "--until-certified"], ["up"]):
        refused = cli("banach", *command, "-w", str(tmp_path / "ws"))
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert ("Error: banach.toml: build.agent names 'sim', the SIMULATED agent (a scripted stand-in for an LLM), "
                "and this workspace is not the bundled example") in refused.stderr, refused.stderr
        assert "Set build.agent to a real preset" in refused.stderr and "docs/agents.md, 'Your own program'" in \
            refused.stderr
    assert not (tmp_path / "ws" / "state" / "build" / "journal.db").exists()  # not one turn was spent
    assert not list((tmp_path / "ws").glob("state/supervisor/*.pid"))
    assert cli("banach", "run", "--until-certified", "--agent-command", AGENT, "-w", str(tmp_path / "ws")).returncode == 0
