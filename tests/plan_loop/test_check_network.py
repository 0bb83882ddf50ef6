"""Plan's checks reach no network unless canon says `network: open` (shared/isolation/sandbox.py --offline): a check
that fetches from an HTTP server on the host's loopback fails cut off and passes with the requirement's word, and a
check's own local server works either way. With the control that the same fetch works outside a sandbox."""
from __future__ import annotations

import http.server
import sys
import threading
import urllib.request
from collections.abc import Iterator

import pytest

from plan_loop.passes import PlanService
from shared.workspace import Workspace
from spec_loop.draft import Draft
from spec_loop.service import SpecService

FETCH = "{python} -c \"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=5)\""
OWN_SERVER = ("{python} -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
              "socket.create_connection(s.getsockname(), timeout=5)\"")


@pytest.fixture
def host_server() -> Iterator[int]:
    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"reached")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()


def requirement(rid: str, command: str, network: str = "") -> str:
    said = f"network: {network}\n" if network else ""
    return f"## {rid}: a check and the network\n{said}checks:\n  - {command}\n\nWhat the check may reach.\n\n"


def test_the_control_fetch_works_outside_a_sandbox(host_server: int) -> None:
    assert urllib.request.urlopen(f"http://127.0.0.1:{host_server}/", timeout=5).read() == b"reached"


@pytest.mark.landlock
def test_a_check_reaches_the_network_only_when_canon_says_so(measured_landlock: Workspace, host_server: int) -> None:
    fetch = FETCH.format(python=sys.executable, port=host_server)
    doc = (requirement("NET-1", fetch) + requirement("NET-2", fetch, "open")
           + requirement("NET-3", OWN_SERVER.format(python=sys.executable)))
    spec = SpecService(measured_landlock)
    with spec.locked():
        decision = spec.decide(Draft("net.md", "requirements/net.md", doc.encode()), source="test")
    spec.close()
    assert decision.accepted, decision.problems
    service = PlanService(Workspace.open(measured_landlock.root))
    try:
        service.run_pass(fresh=True)
    finally:
        service.close()
    fix_plan = (measured_landlock.root / "plan" / "fix_plan.json").read_text()
    assert "NET-1" in fix_plan  # cut off: the host's loopback server is not there
    assert "NET-2" not in fix_plan and "NET-3" not in fix_plan  # canon said open; its own loopback always works


def test_canon_reads_and_writes_the_network_field() -> None:
    from canon.parser import parse_document, render_requirement

    document = parse_document(requirement("NET-9", "true", "open"), "requirements/net.md")
    parsed = document.requirements[0]
    assert parsed.network == "open" and "network: open" in render_requirement(parsed)
    with pytest.raises(Exception, match="network"):
        parse_document(requirement("NET-9", "true", "sometimes"), "requirements/net.md")


@pytest.mark.landlock
def test_builds_sensors_reach_the_network_only_when_they_say_so(measured_landlock: Workspace, host_server: int) -> None:
    """A sensor of banach.toml is cut off like a check, unless it says network = "open"."""
    import json

    from tests.helpers.workspaces import agent, cli

    fetch = FETCH.format(python=sys.executable, port=host_server).replace('"', '\\"')
    sensors = (f'\n[[build.sensors]]\nname = "cut-off"\ncommand = "{fetch}"\n'
               f'\n[[build.sensors]]\nname = "open"\ncommand = "{fetch}"\nnetwork = "open"\n')
    measured_landlock.config_file.write_text(measured_landlock.config_file.read_text() + sensors)
    done = cli("build-loop", "once", "-w", str(measured_landlock.root), "--agent-command", agent("good.py"))
    assert done.returncode == 0, done.stderr
    result = json.loads((measured_landlock.role_dir("build") / "iterations" / "1" / "result.json").read_text())
    assert "cut-off" in result["failing_before"] and "open" not in result["failing_before"], result["failing_before"]
