"""banach ctl: supervisorctl with the workspace's config and credentials, from any folder inside the workspace,
against a real supervisord started by banach up."""
from __future__ import annotations

from pathlib import Path

import pytest

from shared.app import supervisor
from tests.helpers.workspaces import cli, example


@pytest.mark.slow  # a real supervisord and the three loops
def test_ctl_works_from_a_subfolder_and_passes_supervisorctl_through(tmp_path: Path) -> None:
    ws = example(tmp_path, backend="landlock")
    up = cli("banach", "up", "--workspace", str(ws.root))
    try:
        assert up.returncode == 0, up.stderr
        assert "banach ctl status   # supervisorctl with this workspace's config, from any folder in it" in up.stdout
        inside = ws.code / "textkit"
        status = cli("banach", "ctl", "status", cwd=inside)
        assert status.returncode == 0, status.stdout + status.stderr
        assert status.stdout.count("RUNNING") == 3
        stopped = cli("banach", "ctl", "stop", "build", cwd=inside)
        assert stopped.returncode == 0 and "build: stopped" in stopped.stdout, stopped.stdout + stopped.stderr
        after = cli("banach", "ctl", "status", "build", cwd=ws.root / "canon" / "requirements")
        assert "STOPPED" in after.stdout and after.returncode != 0  # supervisorctl's own exit code: not running
        both = cli("banach", "run", "--until-certified", cwd=inside)  # the foreground run would race the loops
        assert both.returncode == 1
        assert (f"run: NOT CERTIFIED: the loops of {ws.root} are running under supervisord ('banach up'); stop them "
                f"with 'banach down -w {ws.root}' first") in both.stdout
    finally:
        supervisor.down(ws)
    gone = cli("banach", "ctl", "status", cwd=ws.root)
    assert gone.returncode == 1
    assert f"supervisord is not running for the workspace {ws.root}" in gone.stderr and "banach up" in gone.stderr


def test_ctl_outside_a_workspace_says_so(tmp_path: Path) -> None:
    result = cli("banach", "ctl", "status", cwd=tmp_path)
    assert result.returncode == 1 and "is not a Banach workspace" in result.stderr
