"""A local two-node Ray cluster, started with `ray start` the way an operator starts one, and stopped without a trace.

Both nodes run on this machine: a head (GCS, raylet, the minimal API server, the node's agents) and a second
node that joins it by address. Each `ray start` runs in a new session; Ray's daemons and every worker they start
stay in that session (workers take their own process group, not their own session), so "the node" is exactly
the processes of one session. Killing the second node is SIGKILL to all of them at once, which is what a lost
machine looks like to the rest of the cluster.

Token authentication is on (RAY_AUTH_MODE=token on both nodes, one token file in the cluster's folder), as Banach
requires; while the cluster runs, this process's environment holds the same two variables, so that a driver in it
(a RayPool) or started from it (build-loop, plan-loop) has the token. `ray_cluster(auth=False)` starts one without,
which Banach must refuse.

Kept lean for a small machine: one CPU per node, a custom `agent_slot` resource, an 80 MiB object store, no
dashboard, no autoscaler monitor, no log monitor, usage stats off (no network calls), and a faster health check
so a lost node is declared dead in about 3 s instead of 15 s. Every port is chosen up front, so two clusters
(or two test runs) never meet on Ray's default ports.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tests.helpers.processes import alive, wait_gone

if TYPE_CHECKING:
    from tests.helpers.ray_netns import NetnsNode

AGENT_SLOT = "agent_slot"
NODE_LABEL = "banach.node"  # "head" or "second": lets a task ask for a node by role
OBJECT_STORE_BYTES = 80 * 1024 * 1024  # Ray's floor is 75 MiB; the default is 30% of memory
WORKER_PORTS = 16  # one per worker process a node may run at once
START_TIMEOUT = 120.0
# Ray system config, set on the head and read by every node: a node is declared dead after ~3 missed checks of 1 s.
SYSTEM_CONFIG = {"health_check_period_ms": 1000, "health_check_timeout_ms": 1000, "health_check_failure_threshold": 3}


def ray_environment() -> dict[str, str]:
    """The environment of `ray start`: no usage reports, no prompts, nothing phoning home."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}
    env.update({"RAY_USAGE_STATS_ENABLED": "0", "RAY_DISABLE_DOCKER_CPU_WARNING": "1"})
    return env


def ray_program() -> str:
    """The `ray` console script of the interpreter running the tests (the same Ray the driver imports)."""
    beside = Path(sys.executable).parent / "ray"
    found = str(beside) if beside.exists() else shutil.which("ray")
    if not found:
        raise RuntimeError("no `ray` command next to this Python or on PATH; "
                           "install the cluster extra: pip install -e '.[cluster]'")
    return found


def session_processes(session: int) -> list[int]:
    """Live processes whose session id is `session` (zombies excluded)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rfind(")") + 2:].split()
        if int(fields[3]) == session and fields[0] not in ("Z", "X"):
            found.append(int(entry))
    return found


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains `text` (Ray's daemons name their temp dir in theirs)."""
    found = []
    needle = text.encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if needle in Path(f"/proc/{entry}/cmdline").read_bytes() and alive(int(entry)):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def rss_bytes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
    return total


def free_ports(count: int) -> list[int]:
    """Ports nobody listens on right now, held open together so they are distinct."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class RayNode:
    role: str  # "head" or "second"
    temp_dir: Path
    session: int = 0  # the session id all of this node's processes share (the pid of its `ray start`)
    started_in: float = 0.0  # seconds `ray start` took to return

    def processes(self) -> list[int]:
        return session_processes(self.session) if self.session else []


@dataclass
class RayCluster:
    address: str  # what `ray.init(address=...)` and `ray start --address` take
    head: RayNode
    second: RayNode
    root: Path
    killed: list[int] = field(default_factory=list)

    def processes(self) -> list[int]:
        """Every live process of the cluster: both nodes' sessions, and anything else naming its temp dir."""
        return sorted(set(self.head.processes()) | set(self.second.processes()) | set(processes_mentioning(str(self.root))))

    def rss_bytes(self) -> int:
        return rss_bytes(self.processes())

    def kill_second(self) -> list[int]:
        """SIGKILL every process of the second node at once (raylet, agents, workers and their children in its
        session), as if its machine was lost; returns the pids killed once they are gone."""
        pids = self.second.processes()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in pids:
            wait_gone(pid, timeout=10.0)
        self.killed.extend(pids)
        return pids


def _node_arguments(ports: list[int], node: RayNode) -> list[str]:
    node_manager, object_manager, agent_grpc, agent_http, runtime_env, metrics, *workers = ports
    return ["--temp-dir", str(node.temp_dir), "--num-cpus", "1", "--resources", json.dumps({AGENT_SLOT: 2}),
            "--labels", f"{NODE_LABEL}={node.role}", "--object-store-memory", str(OBJECT_STORE_BYTES),
            "--node-manager-port", str(node_manager), "--object-manager-port", str(object_manager),
            "--dashboard-agent-grpc-port", str(agent_grpc), "--dashboard-agent-listen-port", str(agent_http),
            "--runtime-env-agent-port", str(runtime_env), "--metrics-export-port", str(metrics),
            "--worker-port-list", ",".join(map(str, workers)),
            "--include-log-monitor", "false", "--disable-usage-stats", "--log-style", "record", "--log-color", "false"]


def _start(node: RayNode, arguments: list[str], auth: dict[str, str]) -> None:
    """Run one `ray start` in a new session; it returns once the node has joined the cluster."""
    node.temp_dir.mkdir(parents=True)
    scratch = node.temp_dir.parent / f"{node.role}-tmp"  # its tasks' temp folders (a killed node's) go with the cluster
    scratch.mkdir()
    began = time.monotonic()
    ray_start([ray_program(), "start", *arguments], {**ray_environment(), **auth, "TMPDIR": str(scratch)}, node.temp_dir,
              node.temp_dir.parent / f"{node.role}-start.log", f"the {node.role} node", node)
    node.started_in = time.monotonic() - began


def ray_start(argv: list[str], env: dict[str, str], cwd: Path, log: Path, name: str, node: RayNode | NetnsNode) -> None:
    """Run a `ray start` command in a new session, its output in log, until the node has joined; node.session is set
    at once, so that what a failed start left is found and killed with the cluster."""
    with log.open("wb") as output:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, env=env,
                                   cwd=cwd, start_new_session=True)
        node.session = process.pid
        try:
            code = process.wait(timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            code = -1
    if code != 0:
        raise RuntimeError(f"`ray start` for {name} failed (exit {code}); its output is in {log}:\n"
                           + log.read_text(errors="replace")[-4000:])


def _stop(cluster: RayCluster) -> None:
    kill_every(cluster.processes, cluster.root)


def kill_every(processes: Callable[[], list[int]], root: Path) -> None:
    """SIGKILL every process of a cluster, then check that none is left. No SIGTERM first: the GCS, the raylets
    and the runtime-env agents take 10 s or more to act on it, and a test cluster has nothing worth saving."""
    for _ in range(3):  # a raylet may start a worker between the listing and the kill; list again
        pids = processes()
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in pids:
            wait_gone(pid, timeout=10.0)
    left = processes()
    if left:
        raise AssertionError(f"the Ray cluster in {root} left processes running after SIGKILL: {left}")


@functools.cache
def token_file() -> Path:
    """One token for every cluster this process starts: Ray's driver loads its token once per process and keeps it,
    as one operator keeps one token for the clusters they run."""
    folder = Path(tempfile.mkdtemp(prefix="ray-token-", dir="/tmp"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / "auth_token"
    path.write_text(secrets.token_hex(32))
    path.chmod(0o600)
    return path


@contextlib.contextmanager
def driver_environment(auth: dict[str, str]) -> Iterator[None]:
    """This process's environment with the cluster's token variables (and without other RAY_AUTH ones), restored after."""
    saved = {key: value for key, value in os.environ.items() if key.startswith("RAY_AUTH")}
    for key in saved:
        del os.environ[key]
    os.environ.update(auth)
    try:
        yield
    finally:
        for key in [key for key in os.environ if key.startswith("RAY_AUTH")]:
            del os.environ[key]
        os.environ.update(saved)


@contextlib.contextmanager
def ray_cluster(*, auth: bool = True) -> Iterator[RayCluster]:
    """Start a head and a second node joined to it; yield the cluster; stop every process of it on exit.

    The temp dirs live in a short folder under /tmp (Ray puts Unix sockets in them, and a socket path has at
    most 107 bytes) and are removed on exit.
    """
    root = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    per_node = 6 + WORKER_PORTS
    gcs, *ports = free_ports(1 + 2 * per_node)
    head_ports, second_ports = ports[:per_node], ports[per_node:]
    cluster = RayCluster(f"127.0.0.1:{gcs}", RayNode("head", root / "head"), RayNode("second", root / "second"), root)
    variables = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_file())} if auth else {
        "RAY_AUTH_MODE": "disabled"}
    try:
        _start(cluster.head, ["--head", "--port", str(gcs), "--include-dashboard", "false", "--no-monitor",
                              "--system-config", json.dumps(SYSTEM_CONFIG), *_node_arguments(head_ports, cluster.head)],
               variables)
        _start(cluster.second, ["--address", cluster.address, *_node_arguments(second_ports, cluster.second)], variables)
        with driver_environment(variables if auth else {}):
            yield cluster
    finally:
        try:
            _stop(cluster)
        finally:
            shutil.rmtree(root, ignore_errors=True)
