"""What a project's build can reach when the environment's build runs it (issue 40): the reach probe of
tests/redteam/test_agent_reach.py (tests/helpers/agents/hostile/reach.py), run as the project's setup.py by the
environment's metadata step instead of as a turn. It tries the operator's HOME, another folder, another workspace,
another process's environment, the process table, root and its capabilities, a host loopback service and an address
of the machine's own network, and says what it found in its distribution's description (its METADATA is all of the
project the venv keeps). In its view it finds nothing; the control, the same build under isolation 'none', finds
what the machine holds."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shared.environment import project_env
from shared.workspace import Workspace
from tests.helpers.isolation import view_unavailable
from tests.helpers.workspaces import HELPERS, example, git
from tests.redteam.test_agent_reach import reached, targets  # noqa: F401 (a fixture)

REACH = HELPERS / "agents" / "hostile" / "reach.py"
SETUP = '''import contextlib, io, json, os, re, sys

found = "REACH {{}}"
if re.fullmatch(r"[0-9a-f]{{24}}\\.building", os.path.basename(os.path.dirname(os.getcwd()))):  # only in a build
    said, argv = io.StringIO(), sys.argv
    sys.argv = ["reach.py", {spec!r}]
    with contextlib.redirect_stdout(said):
        exec(compile({probe!r}, "reach.py", "exec"), {{"__name__": "reach"}})
    sys.argv = argv
    found = said.getvalue()
from setuptools import setup
setup(name="textkit", version="0.1", packages=[], long_description=found)
'''


def _probed(ws: Workspace, targets: dict[str, object]) -> dict[str, str]:  # noqa: F811
    spec = json.dumps({key: value for key, value in targets.items() if key != "home"})
    (ws.code / "setup.py").write_text(SETUP.format(spec=spec, probe=REACH.read_text()))
    (ws.code / "requirements.txt").write_text("iniconfig\n")
    git(ws.code, "add", "setup.py", "requirements.txt")
    git(ws.code, "commit", "-qm", "a setup.py that looks around")
    ws = Workspace.open(ws.root)
    env = project_env(ws, "plan", ws.code_repo(), git(ws.code, "rev-parse", "HEAD"), ws.code)
    [metadata] = list(Path(env.python).parents[1].glob("lib/python*/site-packages/textkit-*.dist-info/METADATA"))
    return reached(metadata.read_text())


@pytest.mark.slow
@pytest.mark.landlock
@pytest.mark.skipif(bool(view_unavailable()), reason=f"no views here: {view_unavailable()}")
def test_a_projects_build_reaches_nothing_it_does_not_need(tmp_path: Path, targets: dict[str, object]) -> None:  # noqa: F811
    found = _probed(example(tmp_path / "ws", backend="landlock"), targets)
    assert set(found) == {"home_secret", "other_folder", "other_workspace", "environ", "processes", "root", "loopback",
                          "outside"} and not any(found.values()), found


@pytest.mark.slow
def test_the_control_the_same_build_unconfined_reaches_the_machine(tmp_path: Path, targets: dict[str, object]) -> None:  # noqa: F811
    found = _probed(example(tmp_path / "ws", backend="none"), targets)
    expected = ["home_secret", "other_folder", "other_workspace", "environ", "processes", "loopback"]
    expected += ["root"] if os.geteuid() == 0 else []
    assert all(found[name] for name in expected), found
