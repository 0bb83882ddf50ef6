"""A local Ray cluster of a head and N nodes, each node in a network namespace of its own, with token authentication on.

    with netns_cluster(nodes=3) as cluster:
        cluster.address          # the head's GCS, 10.231.K.1:PORT, on a bridge the nodes reach
        cluster.driver_env()     # RAY_AUTH_MODE=token and the token's file: what a driver (build-loop) needs
        cluster.kill_raylet(1)   # SIGKILL of node 1's raylet: what a lost machine looks like to Ray

As on real machines, a node reaches the head only by the head's address on the shared network: its 127.0.0.1 is its
own, so nothing the head keeps on its loopback (the model gateway's port, a provider the test stands up) is reachable
from a node. Made with Debian's iproute2 as root: a bridge `bnK` in the host's namespace holding the head's address
10.231.K.1/24, and per node a namespace `bnK-nI` whose `eth0` (10.231.K.(10+I)) is one end of a veth pair whose other
end is on the bridge. K is chosen so that two clusters on one machine never share a bridge. Everything is removed on
exit: every process of every node (by session), the namespaces, the veths, the bridge.

Token authentication (Ray >= 2.52): the head and every node run with RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH
pointing at one token file (0600; one per test process: tests/helpers/ray_cluster.py `token_file`), as an operator
copies `ray get-auth-token --generate`'s file to each machine. Each node has a cache folder of its own
(XDG_CACHE_HOME), where Banach builds that node's project environments, as each machine of a real cluster has its own
disk, and a temp folder of its own (TMPDIR), so that what a lost node's turn leaves is removed with the cluster.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.processes import wait_gone
from tests.helpers.ray_cluster import (
    AGENT_SLOT,
    NODE_LABEL,
    OBJECT_STORE_BYTES,
    START_TIMEOUT,
    SYSTEM_CONFIG,
    WORKER_PORTS,
    free_ports,
    kill_every,
    processes_mentioning,
    ray_environment,
    ray_program,
    ray_start,
    session_processes,
)
from tests.helpers.ray_cluster import (
    token_file as shared_token,
)

SUBNET = "10.231"


def can_make_namespaces() -> str:
    """Why this machine cannot run the cluster, or ''."""
    if os.geteuid() != 0:
        return "network namespaces for the nodes need root"
    if shutil.which("ip") is None:
        return "no `ip` command (Debian's iproute2)"
    return ""


def _ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")


@dataclass
class NetnsNode:
    name: str  # "head" or "node1".."nodeN"
    address: str  # its IP on the cluster's bridge
    namespace: str  # "" for the head, which stays in the host's namespace
    temp_dir: Path
    cache: Path  # its XDG_CACHE_HOME: its own disk
    slots: int
    session: int = 0

    def processes(self) -> list[int]:
        return session_processes(self.session) if self.session else []

    def raylet(self) -> int | None:
        for pid in self.processes():
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().strip() == "raylet":
                    return pid
        return None


@dataclass
class NetnsCluster:
    address: str
    head: NetnsNode
    nodes: list[NetnsNode]
    root: Path
    bridge: str
    token_file: Path
    killed: list[int] = field(default_factory=list)

    def driver_env(self) -> dict[str, str]:
        """What a Ray driver on the head needs besides the address: the token."""
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(self.token_file)}

    def processes(self) -> list[int]:
        found = set(self.head.processes()) | set(processes_mentioning(str(self.root)))
        for node in self.nodes:
            found |= set(node.processes())
        return sorted(found)

    def node_of(self, pid: int) -> NetnsNode | None:
        """The node whose session pid belongs to (a turn's processes leave Ray's session; their ancestors do not)."""
        while pid > 1:
            for node in [self.head, *self.nodes]:
                if pid in node.processes():
                    return node
            try:
                pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                return None
        return None

    def kill_raylet(self, node: NetnsNode) -> int:
        """SIGKILL the node's raylet alone; returns its pid once it is gone. Ray's workers on that node see their raylet
        gone and exit; the head declares the node dead after its missed health checks."""
        pid = node.raylet()
        assert pid is not None, f"{node.name} has no raylet"
        os.kill(pid, signal.SIGKILL)
        wait_gone(pid, timeout=10.0)
        self.killed.append(pid)
        return pid


def _node_arguments(ports: list[int], node: NetnsNode) -> list[str]:
    node_manager, object_manager, agent_grpc, agent_http, runtime_env, metrics, *workers = ports
    return ["--temp-dir", str(node.temp_dir), "--node-ip-address", node.address, "--num-cpus", "1",
            "--resources", json.dumps({AGENT_SLOT: node.slots}), "--labels", f"{NODE_LABEL}={node.name}",
            "--object-store-memory", str(OBJECT_STORE_BYTES),
            "--node-manager-port", str(node_manager), "--object-manager-port", str(object_manager),
            "--dashboard-agent-grpc-port", str(agent_grpc), "--dashboard-agent-listen-port", str(agent_http),
            "--runtime-env-agent-port", str(runtime_env), "--metrics-export-port", str(metrics),
            "--worker-port-list", ",".join(map(str, workers)),
            "--include-log-monitor", "false", "--disable-usage-stats", "--log-style", "record", "--log-color", "false"]


def node_index() -> dict[str, str]:
    """What a node's pip reads to reach a package index: a namespace reaches no network, so this machine's local index
    (/opt/pypi, where there is one), as a real node would use its own mirror."""
    local = Path("/opt/pypi/files")
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(local)} if local.is_dir() else {}


def _start(node: NetnsNode, arguments: list[str], token_file: Path) -> None:
    node.temp_dir.mkdir(parents=True)
    node.cache.mkdir(parents=True)
    scratch = node.temp_dir.parent / f"{node.name}-tmp"  # what its turns leave when it is lost goes with the cluster
    scratch.mkdir()
    env = {**ray_environment(), "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_file),
           "XDG_CACHE_HOME": str(node.cache), "TMPDIR": str(scratch), **(node_index() if node.namespace else {})}
    prefix = ["ip", "netns", "exec", node.namespace] if node.namespace else []
    ray_start([*prefix, ray_program(), "start", *arguments], env, node.temp_dir,
              node.temp_dir.parent / f"{node.name}-start.log", node.name, node)


def _free_subnet() -> int:
    taken = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, timeout=30).stdout
    for number in range(1, 250):
        if f" bn{number}:" not in taken and f" bn{number}@" not in taken:
            return number
    raise RuntimeError("no free bridge name bn1..bn249")


def _network(bridge: str, number: int, nodes: list[NetnsNode]) -> None:
    _ip("link", "add", bridge, "type", "bridge")
    _ip("addr", "add", f"{SUBNET}.{number}.1/24", "dev", bridge)
    _ip("link", "set", bridge, "up")
    for index, node in enumerate(nodes, start=1):
        veth = f"{bridge}v{index}"
        _ip("netns", "add", node.namespace)
        _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", node.namespace)
        _ip("link", "set", veth, "master", bridge)
        _ip("link", "set", veth, "up")
        _ip("-n", node.namespace, "addr", "add", f"{node.address}/24", "dev", "eth0")
        _ip("-n", node.namespace, "link", "set", "eth0", "up")
        _ip("-n", node.namespace, "link", "set", "lo", "up")


def _unwire(bridge: str, nodes: list[NetnsNode]) -> None:
    for index, node in enumerate(nodes, start=1):
        with contextlib.suppress(RuntimeError):
            _ip("netns", "del", node.namespace)  # its eth0 goes with it, and so the veth's other end
        with contextlib.suppress(RuntimeError):
            _ip("link", "del", f"{bridge}v{index}")
    with contextlib.suppress(RuntimeError):
        _ip("link", "del", bridge)


@contextlib.contextmanager
def netns_cluster(nodes: int = 3, *, slots: int = 2, head_slots: int = 0) -> Iterator[NetnsCluster]:
    """A head (no agent slots by default: turns run on the nodes) and `nodes` nodes in namespaces of their own."""
    why = can_make_namespaces()
    if why:
        raise RuntimeError(why)
    number = _free_subnet()
    bridge = f"bn{number}"
    root = Path(tempfile.mkdtemp(prefix="rayns-", dir="/tmp"))
    token_file = shared_token()
    head = NetnsNode("head", f"{SUBNET}.{number}.1", "", root / "head", root / "head-cache", head_slots)
    members = [NetnsNode(f"node{i}", f"{SUBNET}.{number}.{10 + i}", f"{bridge}-n{i}", root / f"node{i}",
                         root / f"node{i}-cache", slots) for i in range(1, nodes + 1)]
    per_node = 6 + WORKER_PORTS
    gcs, *ports = free_ports(1 + per_node)
    cluster = NetnsCluster(f"{head.address}:{gcs}", head, members, root, bridge, token_file)
    try:
        _network(bridge, number, members)
        began = time.monotonic()
        _start(head, ["--head", "--port", str(gcs), "--include-dashboard", "false", "--no-monitor",
                      "--system-config", json.dumps(SYSTEM_CONFIG), *_node_arguments(ports, head)], token_file)
        for node in members:  # each namespace has its own ports: the same numbers serve every node
            _start(node, ["--address", cluster.address, *_node_arguments(ports, node)], token_file)
        assert time.monotonic() - began < START_TIMEOUT * (nodes + 1)
        yield cluster
    finally:
        try:
            kill_every(cluster.processes, root)
        finally:
            _unwire(bridge, members)
            shutil.rmtree(root, ignore_errors=True)
