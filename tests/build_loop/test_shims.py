"""Toolchains as a person has them (issue 41, point 4): with a version manager's shim first on PATH, a `command`
agent `python3 agent.py` runs a turn, because the turn's view holds the manager's root (what the shim runs), not the
shim alone; and where a view lacks a folder a program needs, `banach doctor` names it and the `isolation.read_paths`
line that adds it. The shim is made in the test, pyenv's way: a script in HOME/.pyenv/shims that execs the manager
in HOME/.pyenv/libexec, which execs the version it picks under HOME/.pyenv/versions (a real interpreter)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from shared.isolation.shims import manager_root, missing_folder
from shared.workspace import Workspace
from tests.helpers.workspaces import cli

pytestmark = pytest.mark.landlock

AGENT = '''from pathlib import Path
import sys

Path("textkit/shimmed.py").write_text("RAN_BY = %r\\n" % sys.version.split()[0])
print("agent ran under", sys.executable)
'''


def pyenv_like(home: Path) -> Path:
    """HOME/.pyenv with a shims folder, a manager and one version (a link to this machine's real interpreter)."""
    root = home / ".pyenv"
    version = root / "versions" / "3.test" / "bin"
    version.mkdir(parents=True)
    (version / "python3").symlink_to(os.path.realpath(sys.executable))
    (root / "libexec").mkdir()
    manager = root / "libexec" / "pyenv"
    manager.write_text('#!/bin/sh\n# a stand-in for pyenv: `pyenv exec PROGRAM ARGS...` runs the version\'s PROGRAM\n'
                       'shift\nprogram="$1"\nshift\nexec "$PYENV_ROOT/versions/3.test/bin/$program" "$@"\n')
    (root / "shims").mkdir()
    shim = root / "shims" / "python3"
    shim.write_text(f'#!/bin/sh\nexport PYENV_ROOT="{root}"\nexec "{manager}" exec "${{0##*/}}" "$@"\n')
    for path in (manager, shim):
        path.chmod(0o755)
    return root / "shims"


def test_a_shim_is_read_as_its_managers_root(tmp_path: Path) -> None:
    shims = pyenv_like(tmp_path)
    assert manager_root(shims / "python3") == tmp_path / ".pyenv"
    assert manager_root(tmp_path / "bin" / "python3") is None
    said = f"{shims}/python3: 3: exec: {tmp_path}/.pyenv/libexec/pyenv: not found"
    assert missing_folder(said) == tmp_path / ".pyenv"


def test_a_command_agent_run_through_a_pyenv_shim_runs_its_turn(measured_landlock: Workspace, tmp_path: Path) -> None:
    shims = pyenv_like(Path(os.environ["HOME"]))  # the person's HOME, which the view otherwise never shows
    agent = tmp_path / "agent" / "agent.py"
    agent.parent.mkdir()
    agent.write_text(AGENT)
    path = f"{shims}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    ran = cli("build-loop", "once", "--agent-command", f"python3 {agent}", "--json", "-w", str(measured_landlock.root),
              env={"PATH": path}, timeout=600)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    outcome = json.loads(ran.stdout.strip().splitlines()[-1])
    report = cli("build-loop", "report", str(outcome["iteration"]), "--output", "-w", str(measured_landlock.root))
    assert "agent ran under" in report.stdout and "exit 127" not in report.stdout, report.stdout + ran.stdout


def test_doctor_names_the_folder_a_view_lacks_and_the_read_paths_line(measured_landlock: Workspace,
                                                                        tmp_path: Path) -> None:
    tools = tmp_path / "tools"  # a program's folder that no rule of the view knows of
    tools.mkdir()
    (tools / "real-agent").write_text("#!/bin/sh\necho real-agent 1.0\n")
    (tools / "real-agent").chmod(0o755)
    wrapper = tmp_path / "bin" / "my-agent"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec "{tools}/real-agent" "$@"\n')
    wrapper.chmod(0o755)
    config = measured_landlock.root / "banach.toml"
    config.write_text(config.read_text().replace('agent = "sim"', 'agent = "mine"').replace(
        'agent = "claude"', 'agent = "mine"') + f'\n[agents.mine]\npreset = "command"\ncommand = "{wrapper}"\n')
    said = cli("banach", "doctor", "-w", str(measured_landlock.root), timeout=300)
    out = said.stdout + said.stderr
    assert f'its turn\'s view lacks {tools}, which {wrapper} needs; add it to banach.toml\'s [isolation] section: ' \
           f'read_paths = ["{tools}"]' in out, out
