"""What a governed turn can reach besides its work (SECURITY.md, "What a turn can read and reach"): a real hostile
program (tests/helpers/agents/hostile/reach.py) tries the operator's HOME, another folder, another workspace, another
process's environment, the process table, root and its capabilities, a host loopback service and an address of the
machine's own network. Run unconfined, as the control, it finds each; run as a turn, it finds none."""
from __future__ import annotations

import http.server
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.workspace import Workspace
from tests.helpers.isolation import view_unavailable
from tests.helpers.workspaces import HELPERS, cli, example

REACH = HELPERS / "agents" / "hostile" / "reach.py"
pytestmark = [pytest.mark.landlock,
              pytest.mark.skipif(bool(view_unavailable()), reason=f"no turn views here: {view_unavailable()}")]


def outside_address() -> str | None:
    """An address of this machine on a network other than loopback (a UDP connect sends nothing), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


@pytest.fixture
def targets(tmp_path: Path) -> Iterator[dict[str, object]]:
    """A canary in every place a turn must not reach, and the spec that tells reach.py where they are."""
    canary = f"canary-{secrets.token_hex(8)}"
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(f"-----BEGIN OPENSSH PRIVATE KEY----- {canary}\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "notes.txt").write_text(f"an operator's file {canary}\n")
    other = example(tmp_path / "other")
    (other.canon / "requirements" / "private.md").write_text(f"another workspace's canon {canary}\n")

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(f"metadata {canary}".encode())

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sleeper = subprocess.Popen(["sleep", "300"], env={"PATH": "/usr/bin:/bin", "OPERATOR_TOKEN": canary})
    port = server.server_address[1]
    address = outside_address()
    try:
        yield {"canary": canary, "home": str(home), "home_secret": str(home / ".ssh" / "id_ed25519"),
               "other_folder": str(tmp_path / "elsewhere" / "notes.txt"),
               "other_workspace": str(other.canon / "requirements" / "private.md"), "pid": sleeper.pid,
               "loopback": ["127.0.0.1", port], "outside": [address, port] if address else None}
    finally:
        sleeper.kill()
        sleeper.wait()
        server.shutdown()


def reached(output: str) -> dict[str, str]:
    line = next((line for line in output.splitlines() if line.startswith("REACH ")), None)
    assert line is not None, output
    return dict(json.loads(line.removeprefix("REACH ")))


def test_the_control_finds_every_reach_unconfined(targets: dict[str, object]) -> None:
    spec = {key: value for key, value in targets.items() if key != "home"}
    done = subprocess.run([sys.executable, str(REACH), json.dumps(spec)], capture_output=True, text=True, timeout=60)
    found = reached(done.stdout)
    expected = ["home_secret", "other_folder", "other_workspace", "environ", "processes", "loopback"]
    expected += ["outside"] if targets["outside"] else []
    expected += ["root"] if os.geteuid() == 0 else []
    assert all(found[name] for name in expected), found


def test_a_turn_reaches_nothing_it_does_not_need(tmp_path: Path, targets: dict[str, object]) -> None:
    """As the operator runs it: the default reach ('turn'), Landlock, and HOME the operator's."""
    ws = example(tmp_path / "ws", backend="landlock")
    spec = {key: value for key, value in targets.items() if key != "home"}
    cli("plan-loop", "once", "-w", str(ws.root))
    done = cli("build-loop", "-v", "once", "-w", str(ws.root), "--agent-command",
               f"{sys.executable} {REACH} {json.dumps(spec)!r}", env={"HOME": str(targets["home"])})
    assert "reach: a turn sees its own view" in done.stderr, done.stderr
    output = cli("build-loop", "report", "1", "--output", "-w", str(Workspace.open(ws.root).root)).stdout
    found = reached(output)
    assert not any(found.values()), found
    assert set(found) == {"home_secret", "other_folder", "other_workspace", "environ", "processes", "root", "loopback",
                          "outside"}
