"""SECURITY.md, the dashboard: an agent cannot read its token, cannot reach its port, and what it writes is shown
as text, never run in the person's browser."""
from __future__ import annotations

import pytest

from shared.dashboard.auth import token_path
from shared.workspace import Workspace
from tests.dashboard.test_dashboard import get
from tests.helpers.dashboard import served
from tests.helpers.workspaces import AGENTS, cli

pytestmark = [pytest.mark.landlock]


def test_the_agent_finds_neither_the_token_nor_the_port_and_its_markup_stays_text(measured_landlock: Workspace) -> None:
    ws = measured_landlock
    with served(ws) as at:
        port = at.base.rsplit(":", 1)[1]
        probe = f"python3 {AGENTS / 'hostile' / 'dashboard_probe.py'} {token_path(ws)} {port}"
        ran = cli("build-loop", "once", "--workspace", str(ws.root), "--agent-command", probe)
        assert ran.returncode in (0, 1), ran.stderr
        output = (ws.role_dir("build") / "iterations" / "1" / "output.txt").read_text()
        assert "token: unreadable" in output and at.token not in output, output
        assert "dashboard: unreachable" in output, output
        _, page = get(at, "/iterations/1")
    assert "<script>window.pwned" not in page and "&lt;script&gt;window.pwned" in page
    assert "onerror=\"window.pwned" not in page
