"""The gateway-only network (`--gateway-relay SOCKET:PORT`), tried from inside by real programs through the real
wrapper: an HTTP gateway on a unix socket answers at 127.0.0.1:PORT, streamed chunk by chunk, and nothing else is
reachable: not a TCP or UDP socket on the host's loopback, not an outside address, not DNS. The relay ends with
the program. A control run without the flag shows each host attempt landing.

Outside addresses are TEST-NET ones (never routed), and are tried only once the program has seen that its only
interface is loopback: a broken sandbox fails the test without sending anything off this machine."""
from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import socket
import socketserver
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from shared.errors import IsolationError
from shared.isolation.netrelay import RELAY_NAME
from shared.isolation.policy import sandbox_argv
from shared.isolation.sandbox import NET_ABI, landlock_abi
from shared.isolation.users import unreachable_ancestors
from tests.helpers.processes import alive, wait_gone
from tests.helpers.workspaces import example

ABI = landlock_abi()
ROOT = Path(__file__).resolve().parents[2]
WRAPPER = (sys.executable, "-I", "-m", "shared.isolation.sandbox")
# The wrapper as on a kernel whose Landlock has no network rules: the namespace alone holds the network.
WRAPPER_WITHOUT_LANDLOCK_NET = (sys.executable, "-I", "-c", "import sys, shared.isolation.sandbox as s; "
                                "s._abi = min(s.landlock_abi(), 3); sys.exit(s.main(sys.argv[1:]))")
PORT = 8080  # inside the namespace every port is free
CHUNKS = 5


def _unshare_refused(as_nobody: bool = False) -> str:
    """Why util-linux's unshare cannot make a network namespace for root (or for uid 65534) here; '' when it can.
    Independent of the code under test: it says what the wrapper should manage."""
    if shutil.which("unshare") is None or shutil.which("setpriv") is None:
        return "util-linux's unshare and setpriv are not installed"
    user = ("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups") if as_nobody else ()
    namespaces = ("--map-root-user", "--net") if as_nobody or os.geteuid() else ("--net",)
    probe = subprocess.run((*user, "unshare", *namespaces, "true"), capture_output=True, text=True, timeout=30, cwd="/")
    return "" if probe.returncode == 0 else f"unshare {' '.join(namespaces)} failed: {probe.stderr.strip()}"


NETNS_REFUSED = _unshare_refused()
needs_netns = pytest.mark.skipif(bool(NETNS_REFUSED), reason=f"this machine cannot make a network namespace for this "
                                 f"user ({NETNS_REFUSED}); the wrapper refuses --gateway-relay here")


class _Gateway(socketserver.ThreadingUnixStreamServer):
    """A stand-in for the model gateway: HTTP on a unix socket, recording each request with the peer's pid."""

    daemon_threads = True

    def __init__(self, path: Path) -> None:
        self.seen: list[tuple[str, int]] = []
        self.acks = [threading.Event() for _ in range(CHUNKS)]
        self.sent_at: list[float] = []
        super().__init__(str(path), _GatewayHandler)


class _GatewayHandler(http.server.BaseHTTPRequestHandler):
    server: _Gateway

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        credentials = self.request.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        self.server.seen.append((self.path, struct.unpack("3i", credentials)[0]))
        if self.path.startswith("/ack/"):
            self.server.acks[int(self.path.removeprefix("/ack/"))].set()
        self.send_response(200)
        self.end_headers()
        if self.path != "/stream":
            self.wfile.write(b"hello from the gateway")
            return
        # In lockstep: chunk i+1 only once the program has acknowledged chunk i, on a second connection. A relay
        # that held chunks back until the end would never get the first acknowledgement.
        for index, ack in enumerate(self.server.acks):
            self.server.sent_at.append(time.monotonic())
            self.wfile.write(f"chunk {index}\n".encode())
            if not ack.wait(timeout=10):
                return


@contextmanager
def serving(path: Path) -> Iterator[_Gateway]:
    gateway = _Gateway(path)
    thread = threading.Thread(target=gateway.serve_forever, daemon=True)
    thread.start()
    try:
        yield gateway
    finally:
        gateway.shutdown()
        gateway.server_close()
        thread.join(timeout=30)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[_Gateway]:
    with serving(tmp_path / "gateway.sock") as server:
        yield server


def through_relay(wrapper: tuple[str, ...], tmp: Path, gateway: _Gateway | None, program: str,
                  *args: str) -> tuple[str, ...]:
    relay = ("--gateway-relay", f"{gateway.server_address}:{PORT}") if gateway else ()
    return (*wrapper, "--write", str(tmp), *relay, "--", sys.executable, "-c", program, *args)


def run_json(argv: tuple[str, ...], **kwargs: object) -> dict[str, object]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


# Inside: the gateway through the relay (argv[1] its port, 0 for none), a TCP listener and a UDP socket on the host's
# loopback (argv[2], argv[3]), outside addresses and DNS; which relay it has and which interfaces it sees.
PROBE = """
import errno, http.client, json, os, socket, sys, time
port, host_tcp, host_udp = map(int, sys.argv[1:4])

def attempt(action, *args):
    started = time.monotonic()
    try:
        action(*args)
        result = "ok"
    except socket.gaierror:
        result = "no-name"
    except OSError as exc:
        result = errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno else "timeout"
    return [result, round(time.monotonic() - started, 3)]

def tcp(address):
    socket.create_connection(address, timeout=5).close()

def udp(address):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"from the sandbox", address)

children = open(f"/proc/self/task/{os.getpid()}/children").read().split()
out = {"relays": [int(pid) for pid in children if open(f"/proc/{pid}/comm").read().strip() == sys.argv[4]],
       "interfaces": [name for _, name in socket.if_nameindex()]}
if port:
    gateway = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    gateway.request("GET", "/hello")
    answer = gateway.getresponse()
    out["gateway"] = [answer.status, answer.read().decode()]
out["host_tcp"] = attempt(tcp, ("127.0.0.1", host_tcp))
out["host_udp"] = attempt(udp, ("127.0.0.1", host_udp))
if out["interfaces"] == ["lo"]:  # nothing but loopback: these cannot leave the machine whatever the result
    out["outside"] = {"tcp 192.0.2.1:443": attempt(tcp, ("192.0.2.1", 443)),
                      "tcp 198.51.100.1:53": attempt(tcp, ("198.51.100.1", 53)),
                      "udp 198.51.100.1:53": attempt(udp, ("198.51.100.1", 53)),
                      "dns example.com": attempt(socket.getaddrinfo, "example.com", 443)}
print(json.dumps(out))
"""


@pytest.fixture
def host_sockets() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A TCP listener and a UDP socket on the host's loopback, that the sandboxed program has no business reaching."""
    with socket.create_server(("127.0.0.1", 0)) as tcp, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        yield tcp, udp


def first_datagram_after_a_marker(udp: socket.socket) -> bytes:
    """Send a marker from the host once the program has ended: a datagram it sent earlier would be queued first."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        sender.sendto(b"marker", udp.getsockname())
    udp.settimeout(10)
    return udp.recv(100)


def has_pending_connection(listener: socket.socket) -> bool:
    listener.setblocking(False)
    try:
        listener.accept()[0].close()
        return True
    except BlockingIOError:
        return False


# With --connect-port on top, Landlock narrows TCP to the relay's port as well; the namespace alone is what the
# governor uses (an agent's test suite may run its own local server inside the namespace).
MODES = {"namespace-and-landlock": (*WRAPPER, "--connect-port", str(PORT)), "namespace-alone": WRAPPER_WITHOUT_LANDLOCK_NET}


@pytest.mark.landlock
@needs_netns
@pytest.mark.parametrize("mode", sorted(MODES))
def test_gateway_only_reaches_the_gateway_and_nothing_else(tmp_path: Path, gateway: _Gateway, mode: str,
                                                           host_sockets: tuple[socket.socket, socket.socket]) -> None:
    if mode == "namespace-and-landlock" and ABI < NET_ABI:
        pytest.skip(f"Landlock network rules need ABI {NET_ABI} (Linux >= 6.7); this kernel has ABI {ABI}")
    tcp, udp = host_sockets
    seen = run_json(through_relay(MODES[mode], tmp_path, gateway, PROBE, str(PORT), str(tcp.getsockname()[1]),
                                  str(udp.getsockname()[1]), RELAY_NAME.decode()))
    print(json.dumps(seen, indent=1))

    relays = seen["relays"]
    assert isinstance(relays, list) and len(relays) == 1, seen
    assert seen["gateway"] == [200, "hello from the gateway"]
    assert gateway.seen == [("/hello", relays[0])]  # the request came from the relay
    assert seen["interfaces"] == ["lo"]
    landlock = mode == "namespace-and-landlock"
    assert seen["host_tcp"][0] == ("EACCES" if landlock else "ECONNREFUSED"), seen  # type: ignore[index]
    assert not has_pending_connection(tcp)
    assert first_datagram_after_a_marker(udp) == b"marker"  # the program's datagram never came
    outside = seen["outside"]
    assert isinstance(outside, dict)
    for what, (result, seconds) in outside.items():
        expected = "no-name" if what.startswith("dns") else "EACCES" if landlock and what.startswith("tcp") else "ENETUNREACH"
        assert result == expected and seconds < 2, (what, result, seconds)  # refused at once: no route, no waiting
    assert wait_gone(relays[0]), "the relay outlived the program"


@pytest.mark.landlock
def test_control_without_the_relay_reaches_the_host(tmp_path: Path,
                                                    host_sockets: tuple[socket.socket, socket.socket]) -> None:
    """What the probe above sees without the flag: both host sockets reached."""
    tcp, udp = host_sockets
    seen = run_json(through_relay(WRAPPER, tmp_path, None, PROBE, "0", str(tcp.getsockname()[1]),
                                  str(udp.getsockname()[1]), RELAY_NAME.decode()))
    assert seen["host_tcp"][0] == seen["host_udp"][0] == "ok", seen  # type: ignore[index]
    assert has_pending_connection(tcp)
    assert first_datagram_after_a_marker(udp) == b"from the sandbox"
    assert seen["relays"] == [], seen


# Inside: read the gateway's stream, acknowledging each chunk on a connection of its own as it arrives.
STREAM = """
import http.client, json, socket, sys, time
port = int(sys.argv[1])
stream = socket.create_connection(("127.0.0.1", port), timeout=30)
stream.sendall(b"GET /stream HTTP/1.0\\r\\n\\r\\n")
received, arrivals = b"", []
while data := stream.recv(65536):
    received += data
    lines = received.partition(b"\\r\\n\\r\\n")[2].split(b"\\n")[:-1]
    while len(arrivals) < len(lines):
        arrivals.append(time.monotonic())
        ack = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        ack.request("GET", f"/ack/{len(arrivals) - 1}")
        ack.getresponse().read()
        ack.close()
print(json.dumps({"lines": [line.decode() for line in lines], "arrivals": arrivals}))
"""


@pytest.mark.landlock
@needs_netns
def test_a_streamed_response_comes_through_chunk_by_chunk(tmp_path: Path, gateway: _Gateway) -> None:
    seen = run_json(through_relay(WRAPPER, tmp_path, gateway, STREAM, str(PORT)))
    assert seen["lines"] == [f"chunk {index}" for index in range(CHUNKS)], seen
    arrivals = seen["arrivals"]
    assert isinstance(arrivals, list)
    delays = [round((arrived - sent) * 1000, 2) for arrived, sent in zip(arrivals, gateway.sent_at, strict=True)]
    print(f"chunk sent -> arrived in the sandbox, ms: {delays}")
    assert max(delays) < 1000, delays
    assert [path for path, _ in gateway.seen] == ["/stream", *(f"/ack/{index}" for index in range(CHUNKS))]


# Inside: send argv[2] bytes, close its sending half, and read the answer to the end.
HALF_CLOSE = """
import socket, sys
with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30) as gateway:
    gateway.sendall(b"x" * int(sys.argv[2]))
    gateway.shutdown(socket.SHUT_WR)
    answer = b""
    while data := gateway.recv(65536):
        answer += data
print(answer.decode())
"""


@pytest.mark.landlock
@needs_netns
def test_a_half_close_goes_through_both_ways(tmp_path: Path) -> None:
    """The gateway answers only once the program's end of file reaches it, and its own close ends the program's read."""
    def count_until_end_of_file(listener: socket.socket) -> None:
        connection, _ = listener.accept()
        with connection:
            size = 0
            while data := connection.recv(65536):
                size += len(data)
            connection.sendall(f"{size} bytes, then end of file".encode())

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(tmp_path / "gateway.sock"))
        listener.listen()
        counting = threading.Thread(target=count_until_end_of_file, args=(listener,), daemon=True)
        counting.start()
        result = subprocess.run((*WRAPPER, "--write", str(tmp_path), "--gateway-relay", f"{tmp_path / 'gateway.sock'}:{PORT}",
                                 "--", sys.executable, "-c", HALF_CLOSE, str(PORT), "1000000"),
                                capture_output=True, text=True, timeout=120)
        counting.join(timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1000000 bytes, then end of file"


# Inside, as root: ways back to the host's network. pid 1's namespace file (Landlock keeps a sandboxed program from
# opening another process's /proc/PID/ns), and a handle on the host's namespace that reached it anyway (argv[1],
# inherited here, as one passed over a unix socket or bind-mounted under /run/netns would be) used with setns(2).
SETNS = """
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
try:
    os.close(os.open("/proc/1/ns/net", os.O_RDONLY))
    opened = "ok"
except OSError as exc:
    opened = errno.errorcode[exc.errno]
entered = "ok" if libc.setns(int(sys.argv[1]), 0x40000000) == 0 else errno.errorcode[ctypes.get_errno()]
effective = int(next(line for line in open("/proc/self/status") if line.startswith("CapEff:")).split()[1], 16)
print(json.dumps({"open pid 1's": opened, "setns": entered, "net_admin": bool(effective >> 12 & 1),
                  "sys_admin": bool(effective >> 21 & 1)}))
"""


@pytest.mark.root
@pytest.mark.landlock
@needs_netns
@pytest.mark.parametrize("relay", [True, False], ids=["gateway-only", "control-open-network"])
def test_a_root_program_cannot_setns_back_into_the_host_network(tmp_path: Path, gateway: _Gateway, relay: bool) -> None:
    host_network = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        seen = run_json(through_relay(WRAPPER, tmp_path, gateway if relay else None, SETNS, str(host_network)),
                        pass_fds=(host_network,))
    finally:
        os.close(host_network)
    assert seen["open pid 1's"] == "EACCES", seen
    if relay:  # the wrapper dropped CAP_SYS_ADMIN and CAP_NET_ADMIN before it ran the program
        assert (seen["setns"], seen["net_admin"], seen["sys_admin"]) == ("EPERM", False, False), seen
    else:  # what a root program could do with the handle, had the wrapper kept them
        assert (seen["setns"], seen["net_admin"], seen["sys_admin"]) == ("ok", True, True), seen


# Inside: name its relay, then wait to be killed.
WAIT = """
import os, sys
relays = [int(pid) for pid in open(f"/proc/self/task/{os.getpid()}/children").read().split()
          if open(f"/proc/{pid}/comm").read().strip() == sys.argv[1]]
print(*relays, flush=True)
sys.stdin.read()
"""


@pytest.mark.landlock
@needs_netns
def test_the_relay_dies_with_a_killed_program(tmp_path: Path, gateway: _Gateway) -> None:
    program = subprocess.Popen(through_relay(WRAPPER, tmp_path, gateway, WAIT, RELAY_NAME.decode()),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert program.stdout is not None
        relays = [int(pid) for pid in program.stdout.readline().split()]
        assert len(relays) == 1 and alive(relays[0]), relays
    finally:
        program.send_signal(signal.SIGKILL)
        program.communicate(timeout=30)
    assert wait_gone(relays[0]), "the relay outlived the killed program"


@needs_netns
@pytest.mark.landlock
def test_the_relay_ends_with_a_program_that_exits_under_landlocks_signal_scope(tmp_path: Path, gateway: _Gateway) -> None:
    """Under --scope the program may not signal the relay (a process outside its domain), not even by dying with the
    parent-death signal: the relay watches its parent itself. Found when an environment's build, which runs in no
    cgroup of its own, left one relay per build behind, holding the build's stderr open."""
    argv = through_relay((*WRAPPER, "--scope"), tmp_path, gateway, WAIT, RELAY_NAME.decode())
    program = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert program.stdout is not None and program.stdin is not None
    relays = [int(pid) for pid in program.stdout.readline().split()]
    assert len(relays) == 1 and alive(relays[0]), relays
    program.stdin.close()  # the program reads to the end of its input, then exits by itself
    assert program.wait(timeout=30) == 0
    assert wait_gone(relays[0]), "the relay outlived the program"


# Inside, as uid 65534: the gateway through the relay, and a file written in its folder.
AS_NOBODY = """
import http.client, json, os, socket, sys
gateway = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
gateway.request("GET", "/hello")
open(sys.argv[2], "w").write("written inside")
print(json.dumps({"gateway": gateway.getresponse().read().decode(), "uid": os.getuid(),
                  "interfaces": [name for _, name in socket.if_nameindex()]}))
"""

# Before the wrapper, as uid 65534: user namespaces nested up to the kernel's limit, so that it can make none more.
NESTED_TO_THE_LIMIT = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
while True:
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
        break
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as file:
            file.write(text)
os.execv(sys.argv[1], sys.argv[1:])
"""


def _python_for_nobody() -> str | None:
    for candidate in (sys.executable, "/usr/bin/python3"):
        if os.access(candidate, os.X_OK) and not unreachable_ancestors(Path(candidate)):
            return candidate
    return None


@pytest.fixture
def nobody_folder() -> Iterator[tuple[str, Path]]:
    """An interpreter and a folder that uid 65534 can use (not under pytest's tmp, whose folders are root's alone)."""
    python = _python_for_nobody()
    if python is None or unreachable_ancestors(ROOT / "shared"):
        pytest.skip(f"uid 65534 cannot reach a Python interpreter or {ROOT}: no o+x on the way")
    if shutil.which("setpriv") is None:
        pytest.skip("util-linux's setpriv is not installed: cannot run a program as uid 65534")
    folder = Path(tempfile.mkdtemp(prefix="banach-relay-"))
    try:
        os.chown(folder, 65534, 65534)
        yield python, folder
    finally:
        shutil.rmtree(folder)


def as_nobody(python: str, folder: Path, before: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """The wrapper with a relay to folder/gateway.sock, run as uid 65534 (not -I, which would drop PYTHONPATH: this
    interpreter may not be the one Banach is installed in), after `before` if given."""
    wrapper = (python, "-m", "shared.isolation.sandbox", "--write", str(folder),
               "--gateway-relay", f"{folder / 'gateway.sock'}:{PORT}",
               "--", python, "-c", AS_NOBODY, str(PORT), str(folder / "written"))
    return subprocess.run(("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", *before, *wrapper),
                          cwd=folder, env={"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.root
@pytest.mark.landlock
def test_without_root_it_works_through_a_user_namespace_or_is_refused_saying_why(nobody_folder: tuple[str, Path]) -> None:
    """Run as uid 65534: where util-linux's unshare can make a user and network namespace for that user (and AppArmor
    does not take the capabilities away in it), the wrapper must too: the gateway answers, only loopback, and the file
    written belongs to uid 65534 on the host. Where it cannot, the wrapper must refuse with exit 126 and say that
    user namespaces are what is missing. On the machine this was written on (Linux 6.18, user namespaces allowed, no
    AppArmor restriction) the first branch runs; the next test makes the kernel refuse, to try the second."""
    python, folder = nobody_folder
    refused = _unshare_refused(as_nobody=True)
    apparmor = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
    expect_refusal = bool(refused) or apparmor.exists() and apparmor.read_text().strip() == "1"
    with serving(folder / "gateway.sock") as server:
        os.chown(folder / "gateway.sock", 65534, 65534)
        result = as_nobody(python, folder)
    if expect_refusal:
        assert result.returncode == 126 and "user namespace" in result.stderr, (refused, result)
        assert server.seen == [] and not (folder / "written").exists()
    else:
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == {"gateway": "hello from the gateway", "uid": 65534, "interfaces": ["lo"]}
        written = (folder / "written").stat()
        assert (written.st_uid, written.st_gid) == (65534, 65534)


@pytest.mark.root
@pytest.mark.landlock
def test_without_root_and_without_a_user_namespace_it_refuses_saying_why(nobody_folder: tuple[str, Path]) -> None:
    """The kernel refuses for real: uid 65534 first nests user namespaces up to the limit, then runs the wrapper,
    which cannot make its own, and so runs nothing rather than run with the host's network."""
    python, folder = nobody_folder
    with serving(folder / "gateway.sock") as server:
        os.chown(folder / "gateway.sock", 65534, 65534)
        result = as_nobody(python, folder, before=(python, "-c", NESTED_TO_THE_LIMIT))
    assert result.returncode == 126, result
    assert "refusing to run" in result.stderr and "user namespace" in result.stderr, result.stderr
    print(result.stderr)
    assert server.seen == [] and not (folder / "written").exists()


@pytest.mark.landlock
@needs_netns
def test_doctor_tries_the_gateway_only_network_without_a_view() -> None:
    """Where turns read the machine (isolation.reach 'machine'), they get the relay without a view: doctor tries that.
    (In a view, as uid 65534: tests/shared/test_relay_in_view.py.)"""
    from shared.app.doctor import turn_network

    started = time.monotonic()
    finding = turn_network(in_view=False, configured=True)
    print(f"doctor's gateway-only check took {time.monotonic() - started:.3f} s: {finding}")
    assert finding.ok and "works without a view" in finding.what, finding


@pytest.mark.parametrize("flags", [["--gateway-relay", "no-port-given"], ["--gateway-relay", ":8080"],
                                   ["--gateway-relay", "/run/gw.sock:http"], ["--gateway-relay", "/run/gw.sock:0"],
                                   ["--gateway-relay", "/run/gw.sock:65536"], ["--gateway-relay"],
                                   ["--gateway-relay", "/a.sock:1", "--gateway-relay", "/b.sock:2"],
                                   ["--gateway-relay", "/a.sock:1", "--no-network"]])
def test_the_wrapper_refuses_a_malformed_or_contradictory_relay(tmp_path: Path, flags: list[str]) -> None:
    result = subprocess.run((*WRAPPER, "--write", str(tmp_path), *flags, "--", "true"), capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and "shared.isolation.sandbox:" in result.stderr, result.stderr


def test_sandbox_argv_asks_for_the_relay_and_refuses_it_without_the_wrapper(tmp_path: Path) -> None:
    ws = example(tmp_path, backend="landlock")
    argv = sandbox_argv(ws, ("agent",), [ws.code], gateway_relay=(tmp_path / "gw.sock", 4000))
    assert argv[:4] == WRAPPER and argv[-2:] == ("--", "agent")
    assert argv[argv.index("--gateway-relay") + 1] == f"{tmp_path / 'gw.sock'}:4000"
    assert "--gateway-relay" not in sandbox_argv(ws, ("agent",), [ws.code])

    unsandboxed = example(tmp_path / "none", backend="none")
    assert sandbox_argv(unsandboxed, ("agent",), []) == ("agent",)
    with pytest.raises(IsolationError, match="isolation.backend"):
        sandbox_argv(unsandboxed, ("agent",), [], gateway_relay=(tmp_path / "gw.sock", 4000))
