"""Run plain Python callables on a Ray cluster, each on a node with a free agent slot, as concurrent futures.

The one module that imports ray (an optional dependency: `pip install 'banach[cluster]'`). A pool connects this
process to a running cluster (started by `ray start` on each node; tests/helpers/ray_cluster.py shows how)
as a Ray driver: no dashboard, nothing started locally, the driver's log in a file of our own.

What a task asks for: `agent_slots` of the custom `agent_slot` resource (nodes say how many agents they can run
with `ray start --resources '{"agent_slot": N}'`) and `cpus` CPUs (sensors need them; an agent turn mostly waits
on its model). A task may prefer a node (it runs there while the node lives, anywhere else otherwise) or require
node labels (`ray start --labels key=value`).

What is retried, up to `max_retries` times, by Ray itself: failures of the system, not of the task. The worker
process died (SIGKILL, a crash; kills by Ray's memory monitor follow Ray's own OOM retry rule), its node died or
was lost (raylet gone, machine gone, missed health checks), or an argument object was lost with its node. An
exception raised by the callable is its result and is not retried: the future re-raises it, as itself. A retried
task runs again from the start, on any node with a free slot, so a callable must leave nothing half-done that a
second run cannot redo.

Authentication: Ray's ports accept anyone unless the cluster runs with token authentication (Ray >= 2.52:
RAY_AUTH_MODE=token on every node, the same token on each). A pool refuses a cluster that would let a client in without
the token (`refuse_open_cluster`: a client with no token is sent to the head's GCS in a process of its own, and must be
refused), and a driver that has no token to give, each with the commands that fix it.
"""
from __future__ import annotations

import concurrent.futures
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from shared.errors import BanachError

AGENT_SLOT = "agent_slot"
DEFAULT_MAX_RETRIES = 3
LOG_NAME = "ray-driver.log"
CONNECT_TIMEOUT = 5.0  # seconds to wait for the head's GCS port to accept a connection


class ClusterError(BanachError):
    """The Ray cluster cannot be reached, cannot run a task, or lost it more often than the retries allow."""


class NodeLost(ClusterError):
    """A task's node was lost under it: raised by the task itself when it finds its raylet gone."""


def raylet_alive(raylet: int) -> bool:
    """Inside a task: whether the raylet that started this worker (its parent at the task's start) still is."""
    return os.getppid() == raylet


@dataclass(frozen=True)
class Node:
    """One live node of the cluster, as Ray reports it."""

    id: str  # Ray's node id (hex), what `current_node_id()` returns inside a task
    labels: Mapping[str, str]
    resources: Mapping[str, float]  # totals: "CPU", "agent_slot", "memory", ...
    address: str = ""  # the IP the node is known by
    alive: bool = True
    head: bool = False


def _ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise ClusterError("the Ray backend needs the ray package, which is not installed here. "
                           "Install it with: pip install 'banach[cluster]'") from None
    return ray


def current_node_id() -> str:
    """Inside a task: the id of the node running it."""
    return str(_ray().get_runtime_context().get_node_id())


def _check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fail fast on an address nobody answers at: ray.init retries such an address for minutes."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"the Ray address {address!r} is not host:port (the head's GCS port, 6379 unless "
                           "`ray start --head --port` said otherwise); fix [cluster] address in banach.toml.")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ClusterError(f"nothing answers at the Ray address {address} ({exc}); start the cluster with `ray start --head "
                           f"--port {port}` on {host}, or fix [cluster] address in banach.toml.") from None


TOKEN_FIX = ("on the head: `ray get-auth-token --generate` (it writes ~/.ray/auth_token); copy that file to ~/.ray/auth_token "
             "on every node and on the machine build-loop and plan-loop run on; start every node with "
             "`RAY_AUTH_MODE=token ray start ...`, and run the loops with RAY_AUTH_MODE=token")
_PROBE = """
import sys
from ray._raylet import GcsClient
from ray.exceptions import AuthenticationError
try:
    GcsClient(address=sys.argv[1], cluster_id=None).internal_kv_get(b"banach-probe", b"banach", timeout=10)
except AuthenticationError:
    sys.exit(3)
sys.exit(0)
"""


def token_available(environ: dict[str, str] | None = None) -> str:
    """Where this process's Ray token comes from ('' when it has none): Ray's own order of precedence."""
    env = os.environ if environ is None else environ
    if env.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    if env.get("RAY_AUTH_TOKEN_PATH"):
        path = env["RAY_AUTH_TOKEN_PATH"]
        return f"RAY_AUTH_TOKEN_PATH ({path})" if os.path.isfile(path) else ""
    default = os.path.join(os.path.expanduser("~"), ".ray", "auth_token")
    return default if os.path.isfile(default) else ""


def refuse_open_cluster(address: str, timeout: float = 60.0) -> None:
    """Raise ClusterError unless the cluster at address refuses a client that carries no token."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}
    with tempfile.TemporaryDirectory(prefix="banach-ray-probe-") as home:  # no ~/.ray/auth_token to fall back on
        env.update({"RAY_AUTH_MODE": "disabled", "HOME": home, "RAY_USAGE_STATS_ENABLED": "0"})
        try:
            probe = subprocess.run([sys.executable, "-I", "-c", _PROBE, address], env=env, capture_output=True,
                                   text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL, cwd=home)
        except subprocess.TimeoutExpired:
            raise ClusterError(f"could not tell whether the Ray cluster at {address} requires a token: a client without "
                               f"one neither got in nor was refused within {timeout:g}s") from None
    if probe.returncode == 3:
        return
    if probe.returncode == 0:
        raise ClusterError(f"the Ray cluster at {address} lets in a client that has no token: whoever reaches its ports "
                           f"can run code on every node, an agent's included. Banach refuses it. Turn Ray's token "
                           f"authentication on: {TOKEN_FIX}")
    raise ClusterError(f"could not tell whether the Ray cluster at {address} requires a token (the probe exited "
                       f"{probe.returncode}):\n{probe.stderr.strip()[-1500:]}")


def _restore_environment(saved: Mapping[str, str]) -> None:
    """Undo what ray.init writes into this process's environment (PYTHONBREAKPOINT=ray.util.rpdb...), which every
    child started afterwards, agents included, would inherit. (Its SIGTERM handler is put back by the caller.)"""
    for key in set(os.environ) - set(saved):
        del os.environ[key]
    for key, value in saved.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


def _call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    return fn(*args, **kwargs)


def _call_in_a_fresh_worker(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    return fn(*args, **kwargs)  # the same, as its own remote function: Ray's max_calls is fixed per function


class RayPool:
    """A connection to one Ray cluster: submit callables, get futures back. One pool per process (Ray allows
    one connection per process); use it as a context manager or call shutdown()."""

    def __init__(self, address: str, log_dir: Path, *, max_retries: int = DEFAULT_MAX_RETRIES,
                 namespace: str = "banach", require_token: bool = True) -> None:
        """require_token: refuse a cluster that lets in a client without Ray's token (the default; tests of the pool's
        own mechanics may turn it off)."""
        ray = _ray()
        if ray.is_initialized():
            raise ClusterError("this process is already connected to a Ray cluster; a process holds one RayPool at a time. "
                               "Shut the other pool down first.")
        self.address = address
        self.max_retries = max_retries
        _check_reachable(address)
        if require_token:
            if not token_available():
                raise ClusterError(f"this process has no Ray token to connect to {address} with (none in RAY_AUTH_TOKEN, "
                                   f"RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token). {TOKEN_FIX}")
            refuse_open_cluster(address)
            os.environ["RAY_AUTH_MODE"] = "token"  # the token found above is what this driver sends
            from ray._raylet import Config  # type: ignore[attr-defined]

            Config.initialize("")  # as Ray does when it turns token mode on for a process (its config is cached)
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_file = log_dir / LOG_NAME
        self._handler = logging.FileHandler(self.log_file, encoding="utf-8")
        self._handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        environment = dict(os.environ)
        self.node_ip = ""
        on_sigterm = signal.getsignal(signal.SIGTERM)
        try:
            # configure_logging=False: Ray adds no stderr handler (it clears the "ray" logger's handlers here).
            ray.init(address=address, namespace=namespace, configure_logging=False, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ClusterError(f"cannot connect to the Ray cluster at {address}: {exc}. Start it with `ray start --head` "
                               "on the head machine (and `ray start --address=...` on the others), or fix [cluster] address "
                               "in banach.toml.") from None
        finally:
            _restore_environment(environment)
            if threading.current_thread() is threading.main_thread():  # ray.init sets SIGTERM to sys.exit there
                signal.signal(signal.SIGTERM, on_sigterm)
        ray_logger = logging.getLogger("ray")
        ray_logger.addHandler(self._handler)
        ray_logger.propagate = False
        self.node_ip = str(ray.util.get_node_ip_address())  # the address the cluster knows this machine by
        self._reused = ray.remote(_call)
        self._fresh = ray.remote(max_calls=1)(_call_in_a_fresh_worker)
        self._refs: dict[concurrent.futures.Future[Any], Any] = {}

    def __enter__(self) -> RayPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def nodes(self, *, dead: bool = False) -> list[Node]:
        """The live nodes (and, with dead, those the cluster lost), head first."""
        found = [Node(entry["NodeID"], dict(entry.get("Labels") or {}), dict(entry.get("Resources") or {}),
                      str(entry.get("NodeManagerAddress") or ""), bool(entry.get("Alive")),
                      "node:__internal_head__" in (entry.get("Resources") or {}))
                 for entry in _ray().nodes() if dead or entry.get("Alive")]
        return sorted(found, key=lambda node: (not node.head, not node.alive))

    def submit(self, fn: Callable[..., Any], args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None, *,
               cpus: float = 1.0, agent_slots: int = 1, prefer_node: str | None = None, pin_node: str | None = None,
               node_labels: Mapping[str, str] | None = None, max_retries: int | None = None,
               fresh_worker: bool = True, spread: bool = False) -> concurrent.futures.Future[Any]:
        """Run fn(*args, **kwargs) on a node with `agent_slots` free agent slots and `cpus` free CPUs.

        With fresh_worker (the default) the task gets a worker process of its own, which exits afterwards (and
        Ray kills the children it left): nothing one task does to its process (working directory, environment,
        Landlock, rlimits, signal handlers) reaches the next. It costs a new Python process per task (about 1 s
        on a busy 2-core machine, against ~4 ms for a reused worker); fresh_worker=False reuses workers.
        The future is running from the start: Future.cancel() cannot stop it, pool.cancel() can."""
        ray = _ray()
        self._check_feasible(cpus, agent_slots)
        options: dict[str, Any] = {"num_cpus": cpus, "resources": {AGENT_SLOT: agent_slots} if agent_slots else {},
                                   "max_retries": self.max_retries if max_retries is None else max_retries,
                                   "retry_exceptions": False, "name": getattr(fn, "__qualname__", repr(fn))}
        if prefer_node is not None or pin_node is not None:  # pin_node: there or nowhere
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(str(pin_node or prefer_node), soft=pin_node is None)
        elif spread:  # tasks submitted together go to different nodes where they can
            options["scheduling_strategy"] = "SPREAD"
        if node_labels:
            options["label_selector"] = dict(node_labels)
        remote = self._fresh if fresh_worker else self._reused
        ref = remote.options(**options).remote(fn, tuple(args), dict(kwargs or {}))
        outer: concurrent.futures.Future[Any] = concurrent.futures.Future()
        outer.set_running_or_notify_cancel()
        self._refs[outer] = ref
        ref.future().add_done_callback(lambda inner: self._settle(outer, inner, ray, options))
        return outer

    def cancel(self, future: concurrent.futures.Future[Any]) -> None:
        """Stop a task: Ray kills its worker process (SIGKILL) and does not retry it; the future raises
        CancelledError. Children the task started in their own session are not killed by this."""
        ref = self._refs.get(future)
        if ref is not None and not future.done():
            _ray().cancel(ref, force=True)

    def shutdown(self) -> None:
        """Disconnect. Ray ends this driver's job: the cluster kills the workers that ran its tasks."""
        ray = _ray()
        if ray.is_initialized():
            ray.shutdown()
        ray_logger = logging.getLogger("ray")
        ray_logger.removeHandler(self._handler)
        ray_logger.propagate = True
        self._handler.close()
        self._refs.clear()

    def _check_feasible(self, cpus: float, agent_slots: int) -> None:
        """Refuse at once what no live node could ever run (Ray would keep such a task pending forever)."""
        nodes = self.nodes()
        if any(node.resources.get(AGENT_SLOT, 0) >= agent_slots and node.resources.get("CPU", 0) >= cpus for node in nodes):
            return
        offered = ", ".join(f"{node.id[:8]}: {node.resources.get(AGENT_SLOT, 0):g} {AGENT_SLOT} and "
                            f"{node.resources.get('CPU', 0):g} CPU" for node in nodes) or "no live node"
        raise ClusterError(f"no node of the Ray cluster at {self.address} offers {agent_slots} {AGENT_SLOT} and {cpus:g} CPU "
                           f"({offered}). Start nodes with `ray start --resources '{{\"{AGENT_SLOT}\": N}}' --num-cpus M`, "
                           "or ask for less.")

    def _settle(self, outer: concurrent.futures.Future[Any], inner: concurrent.futures.Future[Any], ray: ModuleType,
                options: Mapping[str, Any]) -> None:
        self._refs.pop(outer, None)
        try:
            outer.set_result(inner.result())
        except BaseException as error:  # noqa: B036 - whatever happened, the future is settled with it
            outer.set_exception(self._outcome(error, ray, options))

    def _outcome(self, error: BaseException, ray: ModuleType, options: Mapping[str, Any]) -> BaseException:
        """What the future raises for what Ray raised."""
        name = options["name"]
        if isinstance(error, ray.exceptions.RayTaskError):  # the callable raised: its own exception, remote traceback noted
            cause = error.cause if isinstance(error.cause, BaseException) else error
            cause.add_note(f"raised in the Ray task {name} on the cluster at {self.address}:\n{error}")
            return cause
        if isinstance(error, ray.exceptions.TaskCancelledError | concurrent.futures.CancelledError):
            return concurrent.futures.CancelledError(f"task {name} was cancelled")
        if isinstance(error, ray.exceptions.RayError):
            return ClusterError(f"task {name} failed on the Ray cluster at {self.address} (retried up to "
                                f"{options['max_retries']} times): {type(error).__name__}: {error}")
        return ClusterError(f"task {name} could not be collected from the Ray cluster at {self.address}: "
                            + "".join(traceback.format_exception_only(error)).strip())
