"""The kernel sandbox every agent turn, sensor and check runs in, tried from inside by real programs: no signals
or abstract unix sockets to processes outside, TCP only to allowed ports, and a wrapper the work tree cannot replace.
Each promise has a control run (without the flag, or with plain `-m`) that shows the attack working."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.isolation.policy import sandbox_argv
from shared.isolation.sandbox import NET_ABI, SCOPE_ABI, landlock_abi
from tests.helpers.workspaces import example

ABI = landlock_abi()
needs_scopes = pytest.mark.skipif(ABI < SCOPE_ABI, reason=f"Landlock scopes need ABI {SCOPE_ABI} (Linux >= 6.12); "
                                  f"this kernel has ABI {ABI}")
needs_net = pytest.mark.skipif(ABI < NET_ABI, reason=f"Landlock network rules need ABI {NET_ABI} (Linux >= 6.7); "
                               f"this kernel has ABI {ABI}")

WRAPPER = (sys.executable, "-I", "-m", "shared.isolation.sandbox")

# Outside any sandbox: blocks the signals it may be sent, so the kernel records them as pending instead of
# acting on them, runs the rest of argv (if any), and reports what was pending once stdin closes.
TARGET = """
import json, signal, subprocess, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGUSR1})
child = json.loads(subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=60).stdout) if sys.argv[1:] else None
print("READY", flush=True)
sys.stdin.read()
print(json.dumps({"child": child, "pending": sorted(s.name for s in signal.sigpending())}))
"""

# Inside the sandbox: signal the parent, an unrelated process (argv[1]) and a child of its own.
SIGNALLER = """
import errno, json, os, signal, subprocess, sys
signal.pthread_sigmask(signal.SIG_SETMASK, set())  # the parent blocked these; its own child must feel SIGTERM

def attempt(send):
    try:
        send()
        return "ok"
    except OSError as exc:
        return errno.errorcode[exc.errno]

parent, unrelated = os.getppid(), int(sys.argv[1])
own = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
pidfd = os.pidfd_open(unrelated)
out = {
    "parent": [attempt(lambda: os.kill(parent, signal.SIGTERM)), attempt(lambda: os.kill(parent, signal.SIGUSR1))],
    "unrelated": [attempt(lambda: os.kill(unrelated, signal.SIGTERM)),
                  attempt(lambda: signal.pidfd_send_signal(pidfd, signal.SIGUSR1))],
    "own_child": attempt(lambda: own.send_signal(signal.SIGTERM)),
}
own.stdin.close()
out["own_child_exit"] = own.wait(timeout=30)
print(json.dumps(out))
"""

# Inside the sandbox: connect to abstract unix sockets bound outside (argv[1] stream, argv[2] datagram), and to
# one of its own.
ABSTRACT = """
import errno, json, socket, sys

def attempt(kind, name, send=False):
    sock = socket.socket(socket.AF_UNIX, kind)
    try:
        sock.sendto(b"x", name) if send else sock.connect(name)
        return "ok"
    except OSError as exc:
        return errno.errorcode[exc.errno]
    finally:
        sock.close()

own = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
own.bind("\\0" + sys.argv[1] + "-own")
own.listen()
print(json.dumps({"stream": attempt(socket.SOCK_STREAM, "\\0" + sys.argv[1]),
                  "datagram": attempt(socket.SOCK_DGRAM, "\\0" + sys.argv[2], send=True),
                  "own": attempt(socket.SOCK_STREAM, "\\0" + sys.argv[1] + "-own")}))
"""

# Inside the sandbox: TCP connects to the allowed loopback port (argv[1]) and another (argv[2]), to the other one
# over IPv6 and at an outside address (TEST-NET-1, never routed), and a bind.
NETWORK = """
import errno, json, socket, sys

def attempt(family, address, bind=False):
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError:
        return "no-socket"
    sock.settimeout(5)
    try:
        sock.bind(address) if bind else sock.connect(address)
        return "ok"
    except OSError as exc:
        return errno.errorcode[exc.errno] if exc.errno else "timeout"
    finally:
        sock.close()

allowed, other = int(sys.argv[1]), int(sys.argv[2])
print(json.dumps({"allowed": attempt(socket.AF_INET, ("127.0.0.1", allowed)),
                  "other": attempt(socket.AF_INET, ("127.0.0.1", other)),
                  "other_ipv6": attempt(socket.AF_INET6, ("::1", other)),
                  "other_outside": attempt(socket.AF_INET, ("192.0.2.1", other)) if "--restricted" in sys.argv else "",
                  "bind": attempt(socket.AF_INET, ("127.0.0.1", 0), bind=True)}))
"""


def python(script: str, *args: str) -> tuple[str, ...]:
    return (sys.executable, "-c", script, *args)


def sandboxed(tmp: Path, flags: list[str], program: tuple[str, ...]) -> tuple[str, ...]:
    return (*WRAPPER, "--write", str(tmp), *flags, "--", *program)


def run_json(argv: tuple[str, ...], **kwargs: object) -> dict[str, object]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[str]]:
    """A process started outside the sandbox that the sandboxed one has no business signalling."""
    process = subprocess.Popen(python(TARGET), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "READY"
    yield process
    process.kill()
    process.wait(timeout=30)


@pytest.mark.landlock
@needs_scopes
@pytest.mark.parametrize("scoped", [True, False], ids=["scoped", "control-unscoped"])
def test_sandboxed_child_cannot_signal_processes_outside(tmp_path: Path, bystander: subprocess.Popen[str],
                                                         scoped: bool) -> None:
    signaller = sandboxed(tmp_path, ["--scope"] if scoped else [], python(SIGNALLER, str(bystander.pid)))
    parent = subprocess.Popen(python(TARGET, *signaller), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    seen, _ = parent.communicate("", timeout=60)  # READY comes after the sandboxed child is done
    parent_report = json.loads(seen.splitlines()[-1])
    bystander_report = json.loads(bystander.communicate("", timeout=30)[0].splitlines()[-1])
    child = parent_report["child"]

    assert child["own_child"] == "ok" and child["own_child_exit"] == -signal.SIGTERM  # its own children stay in reach
    if scoped:
        assert child["parent"] == ["EPERM", "EPERM"] and child["unrelated"] == ["EPERM", "EPERM"], child
        assert parent_report["pending"] == [] and bystander_report["pending"] == []
    else:  # the attack, without the scope: both signals land on the parent and on the bystander
        assert child["parent"] == ["ok", "ok"] and child["unrelated"] == ["ok", "ok"], child
        assert parent_report["pending"] == ["SIGTERM", "SIGUSR1"] == bystander_report["pending"]


@pytest.mark.landlock
@needs_scopes
@pytest.mark.parametrize("scoped", [True, False], ids=["scoped", "control-unscoped"])
def test_sandboxed_child_cannot_reach_abstract_unix_sockets_bound_outside(tmp_path: Path, scoped: bool) -> None:
    name = f"banach-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stream, socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as dgram:
        stream.bind("\0" + name)
        stream.listen()
        dgram.bind("\0" + name + "-dgram")
        seen = run_json(sandboxed(tmp_path, ["--scope"] if scoped else [], python(ABSTRACT, name, name + "-dgram")))
    assert seen["own"] == "ok"  # sockets inside the sandbox still work
    expected = "EPERM" if scoped else "ok"
    assert (seen["stream"], seen["datagram"]) == (expected, expected), seen


@pytest.fixture
def listeners() -> Iterator[tuple[int, int]]:
    """Two loopback TCP listeners outside the sandbox: the allowed one and another."""
    with socket.create_server(("127.0.0.1", 0)) as allowed, socket.create_server(("127.0.0.1", 0)) as other:
        yield allowed.getsockname()[1], other.getsockname()[1]


@pytest.mark.landlock
@needs_net
def test_connect_port_allows_that_port_only(tmp_path: Path, listeners: tuple[int, int]) -> None:
    allowed, other = listeners
    seen = run_json(sandboxed(tmp_path, ["--connect-port", str(allowed)],
                              python(NETWORK, str(allowed), str(other), "--restricted")))
    assert seen["allowed"] == "ok"
    assert seen["other"] == seen["other_outside"] == seen["bind"] == "EACCES", seen
    assert seen["other_ipv6"] in ("EACCES", "no-socket"), seen


@pytest.mark.landlock
@needs_net
def test_no_network_denies_every_tcp_connect_and_bind(tmp_path: Path, listeners: tuple[int, int]) -> None:
    allowed, other = listeners
    seen = run_json(sandboxed(tmp_path, ["--no-network"], python(NETWORK, str(allowed), str(other), "--restricted")))
    assert seen["allowed"] == seen["other"] == seen["other_outside"] == seen["bind"] == "EACCES", seen
    assert seen["other_ipv6"] in ("EACCES", "no-socket"), seen


@pytest.mark.landlock
def test_control_without_network_flags_both_ports_connect(tmp_path: Path, listeners: tuple[int, int]) -> None:
    allowed, other = listeners
    seen = run_json(sandboxed(tmp_path, [], python(NETWORK, str(allowed), str(other))))
    assert (seen["allowed"], seen["other"], seen["bind"]) == ("ok", "ok", "ok"), seen


def test_wrapper_refuses_unknown_or_contradictory_flags(tmp_path: Path) -> None:
    for flags in (["--no-netwrok"], ["--no-network", "--connect-port", "80"], ["--connect-port"]):
        result = subprocess.run(sandboxed(tmp_path, flags, ("true",)), capture_output=True, text=True, timeout=60)
        assert result.returncode == 2 and "shared.isolation.sandbox:" in result.stderr, (flags, result.stderr)


# As plan's worker uses it: restrict_writes in-process, here as an older kernel would run it (the ABI answer
# pinned to argv[1]: the ruleset then carries only that ABI's rights, struct size and features).
OLDER_KERNEL = """
import errno, json, sys
from pathlib import Path
import shared.isolation.sandbox as sandbox
sandbox._abi = int(sys.argv[1])
inside, outside = Path(sys.argv[2]), Path(sys.argv[3])
out = {}
for name, options in (("scope", {"scope_signals": True}), ("net", {"connect_ports": ()}), ("plain", {})):
    try:
        sandbox.restrict_writes([inside.parent], **options)
        out[name] = "enforced"
    except sandbox.LandlockMissing:
        out[name] = "refused"
for name, path in (("inside", inside), ("outside", outside)):
    try:
        path.write_text("x")
        out[name] = "ok"
    except OSError as exc:
        out[name] = errno.errorcode[exc.errno]
print(json.dumps(out))
"""


@pytest.mark.landlock
@pytest.mark.parametrize("abi", range(1, 8))
def test_every_abi_restricts_writes_and_refuses_what_it_lacks(tmp_path: Path, abi: int) -> None:
    if abi > ABI:
        pytest.skip(f"this kernel has Landlock ABI {ABI}, below {abi}")
    (tmp_path / "inside").mkdir()
    seen = run_json(python(OLDER_KERNEL, str(abi), str(tmp_path / "inside" / "file"), str(tmp_path / "outside")))
    assert (seen["inside"], seen["outside"], seen["plain"]) == ("ok", "EACCES", "enforced"), seen
    assert seen["scope"] == ("enforced" if abi >= SCOPE_ABI else "refused")
    assert seen["net"] == ("enforced" if abi >= NET_ABI else "refused")


# Planted by the agent in the work tree: announce itself, then run the command with no sandbox at all.
PLANT = """
import os, sys
print("PLANTED " + __file__, file=sys.stderr, flush=True)
command = sys.argv[sys.argv.index("--") + 1:]
os.execvp(command[0], command)
"""
PLANTS = {
    "shared-package": {"shared/__init__.py": 'import sys\nprint("PLANTED " + __file__, file=sys.stderr)\n',
                       "shared/isolation/__init__.py": 'import sys\nprint("PLANTED " + __file__, file=sys.stderr)\n',
                       "shared/isolation/sandbox.py": PLANT},
    "stdlib-module": {"ctypes.py": PLANT},  # the real wrapper imports ctypes: a copy beside it would run instead
}
WRITE_OUTSIDE = """
import sys
try:
    open(sys.argv[1], "a").close()
    print("WROTE OUTSIDE")
except PermissionError:
    print("DENIED")
"""


@pytest.mark.landlock
@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_modules_planted_in_the_work_tree_do_not_replace_the_wrapper(tmp_path: Path, plant: str) -> None:
    ws = example(tmp_path, backend="landlock")
    for relative, text in PLANTS[plant].items():
        (ws.code / relative).parent.mkdir(parents=True, exist_ok=True)
        (ws.code / relative).write_text(text)
    program = python(WRITE_OUTSIDE, str(tmp_path / "outside.txt"))

    def in_work_tree(argv: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
        """As sensors and agent turns run: the work tree is the cwd and on PYTHONPATH."""
        return subprocess.run(argv, cwd=ws.code, env={**os.environ, "PYTHONPATH": str(ws.code)}, capture_output=True,
                              text=True, timeout=60)

    control = in_work_tree((sys.executable, "-m", "shared.isolation.sandbox", "--write", str(ws.code), "--", *program))
    planted = {f"PLANTED {ws.code / relative}" for relative in PLANTS[plant]}
    assert planted <= set(control.stderr.splitlines()), control.stderr  # the attack, with plain -m: every plant ran
    assert control.stdout.strip() == "WROTE OUTSIDE"

    argv = sandbox_argv(ws, program, [ws.code])
    assert argv[:4] == WRAPPER
    guarded = in_work_tree(argv)
    assert "PLANTED" not in guarded.stderr and guarded.stdout.strip() == "DENIED", guarded
