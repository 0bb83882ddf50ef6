"""The Ray pool against a real two-node cluster started with `ray start` (tests/helpers/ray_cluster.py)."""
from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="ray is not installed; install the cluster extra: pip install -e '.[cluster]'")

from shared.ray_pool import ClusterError, RayPool, current_node_id  # noqa: E402
from tests.helpers.processes import alive, wait_gone  # noqa: E402
from tests.helpers.ray_cluster import NODE_LABEL, RayCluster, free_ports, ray_cluster, token_file  # noqa: E402
from tests.helpers.waiting import wait_until  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
TASK_TIMEOUT = 120.0


# The tasks. Ray imports this module on the workers, from the driver's working directory (the repository root).

def where() -> tuple[str, int]:
    return current_node_id(), os.getpid()


def meet(folder: Path, name: str, partner: str) -> bool:
    """Say we started, then wait for the partner to say so: true only if both ran at the same time."""
    (folder / f"{name}.started").touch()
    return wait_until(lambda: (folder / f"{partner}.started").exists(), [folder], timeout=60)


def fails(record: Path) -> None:
    with record.open("a") as handle:
        handle.write(f"{os.getpid()}\n")
    raise ValueError("the task's own failure")


def dies_the_first_time(record: Path) -> int:
    with record.open("a") as handle:
        handle.write(f"{os.getpid()}\n")
    if len(record.read_text().splitlines()) == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return os.getpid()


def leaves_a_child() -> tuple[int, int]:
    child = subprocess.Popen(["sleep", "600"], start_new_session=True)
    return os.getpid(), child.pid


def turn(folder: Path) -> str:
    """A turn: write a heartbeat (node, pid), then work until released."""
    with (folder / "heartbeat").open("a") as handle:
        handle.write(f"{current_node_id()} {os.getpid()}\n")
    assert wait_until(lambda: (folder / "release").exists(), [folder], timeout=TASK_TIMEOUT)
    return current_node_id()


def heartbeats(folder: Path) -> list[tuple[str, int]]:
    path = folder / "heartbeat"
    lines = path.read_text().splitlines() if path.exists() else []
    return [(node, int(pid)) for node, pid in (line.split() for line in lines)]


# Fixtures.

@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    with ray_cluster() as started:
        yield started


@pytest.fixture
def pool(cluster: RayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RayPool]:
    monkeypatch.chdir(ROOT)  # Ray puts the driver's working directory on the workers' sys.path: this module is found there
    with RayPool(cluster.address, tmp_path / "logs") as connected:
        yield connected


def node_id(pool: RayPool, role: str) -> str:
    return next(node.id for node in pool.nodes() if node.labels.get(NODE_LABEL) == role)


# Tests.

def test_an_address_nobody_answers_at_fails_at_once(tmp_path: Path) -> None:
    [port] = free_ports(1)
    began = time.monotonic()
    with pytest.raises(ClusterError, match=f"nothing answers at the Ray address 127.0.0.1:{port}"):
        RayPool(f"127.0.0.1:{port}", tmp_path / "logs")
    assert time.monotonic() - began < 10
    with pytest.raises(ClusterError, match="not host:port"):
        RayPool("ray-head", tmp_path / "logs")


def test_connecting_leaves_this_process_as_it_was(cluster: RayCluster, tmp_path: Path) -> None:
    """ray.init sets PYTHONBREAKPOINT and a SIGTERM handler of its own; the pool puts both back (the environment is
    checked by the conftest guard)."""
    handler = signal.getsignal(signal.SIGTERM)
    with RayPool(cluster.address, tmp_path / "logs"):
        assert signal.getsignal(signal.SIGTERM) is handler
        assert "PYTHONBREAKPOINT" not in os.environ or os.environ["PYTHONBREAKPOINT"] != "ray.util.rpdb._driver_set_trace"


def test_the_pool_sees_both_nodes_head_first(pool: RayPool) -> None:
    nodes = pool.nodes()
    assert [node.labels[NODE_LABEL] for node in nodes] == ["head", "second"]
    assert all(node.resources["agent_slot"] == 2 and node.resources["CPU"] == 1 for node in nodes)
    assert pool.log_file.exists()


def test_a_task_runs_on_the_node_it_prefers_or_requires(pool: RayPool) -> None:
    second = node_id(pool, "second")
    assert pool.submit(where, prefer_node=second).result(TASK_TIMEOUT)[0] == second
    assert pool.submit(where, node_labels={NODE_LABEL: "second"}).result(TASK_TIMEOUT)[0] == second
    assert pool.submit(where, node_labels={NODE_LABEL: "head"}).result(TASK_TIMEOUT)[0] == node_id(pool, "head")


def test_two_tasks_run_at_once_on_the_two_slots_of_one_node(pool: RayPool, tmp_path: Path) -> None:
    folder = tmp_path / "meet"
    folder.mkdir()
    second = {NODE_LABEL: "second"}
    one = pool.submit(meet, (folder, "one", "two"), cpus=0.5, node_labels=second)
    two = pool.submit(meet, (folder, "two", "one"), cpus=0.5, node_labels=second)
    assert one.result(TASK_TIMEOUT) and two.result(TASK_TIMEOUT)


def test_each_task_gets_a_fresh_worker_that_takes_its_children_along(pool: RayPool) -> None:
    first_worker, child = pool.submit(leaves_a_child).result(TASK_TIMEOUT)
    second_worker, other_child = pool.submit(leaves_a_child).result(TASK_TIMEOUT)
    assert first_worker != second_worker
    assert all(wait_gone(pid, timeout=30) for pid in (first_worker, child, second_worker, other_child))


def test_the_callables_exception_comes_back_as_itself_and_is_not_retried(pool: RayPool, tmp_path: Path) -> None:
    record = tmp_path / "attempts"
    future = pool.submit(fails, (record,))
    with pytest.raises(ValueError, match="the task's own failure") as raised:
        future.result(TASK_TIMEOUT)
    assert type(raised.value) is ValueError
    assert any("raised in the Ray task fails" in note for note in getattr(raised.value, "__notes__", []))
    assert len(record.read_text().splitlines()) == 1


def test_a_worker_that_dies_is_retried_and_without_retries_the_future_says_so(pool: RayPool, tmp_path: Path) -> None:
    record = tmp_path / "attempts"
    second_pid = pool.submit(dies_the_first_time, (record,)).result(TASK_TIMEOUT)
    first_pid = int(record.read_text().split()[0])
    assert second_pid != first_pid and not alive(first_pid)

    record.unlink()
    with pytest.raises(ClusterError, match="WorkerCrashedError"):
        pool.submit(dies_the_first_time, (record,), max_retries=0).result(TASK_TIMEOUT)


def test_a_request_no_node_can_meet_is_refused_at_once(pool: RayPool) -> None:
    with pytest.raises(ClusterError, match="offers 3 agent_slot"):
        pool.submit(where, agent_slots=3)
    with pytest.raises(ClusterError, match="2 CPU"):
        pool.submit(where, cpus=2)


def test_cancel_kills_the_tasks_worker(pool: RayPool, tmp_path: Path) -> None:
    folder = tmp_path / "cancel"
    folder.mkdir()
    future = pool.submit(turn, (folder,), cpus=0)
    assert wait_until(lambda: heartbeats(folder), [folder], timeout=TASK_TIMEOUT)
    pool.cancel(future)
    with pytest.raises(concurrent.futures.CancelledError):
        future.result(TASK_TIMEOUT)
    [(_, pid)] = heartbeats(folder)
    assert wait_gone(pid, timeout=30)


def test_killing_the_second_node_mid_task_finishes_the_task_on_the_head(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    folder = tmp_path / "turn"
    folder.mkdir()
    with ray_cluster() as cluster, RayPool(cluster.address, tmp_path / "logs") as pool:
        head, second = node_id(pool, "head"), node_id(pool, "second")
        future = pool.submit(turn, (folder,), cpus=0, prefer_node=second)
        assert wait_until(lambda: heartbeats(folder), [folder], timeout=TASK_TIMEOUT)
        [(first_node, first_pid)] = heartbeats(folder)
        assert first_node == second

        killed = cluster.kill_second()
        killed_at = time.monotonic()
        assert first_pid in killed
        (folder / "release").touch()
        assert future.result(TASK_TIMEOUT) == head
        recovered_in = time.monotonic() - killed_at

        assert [node for node, _ in heartbeats(folder)] == [second, head]
        assert [node.id for node in pool.nodes()] == [head]
        print(f"task recovered on the head {recovered_in:.1f}s after the second node was killed")


def test_the_pool_and_the_cluster_leave_no_ray_process_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    with ray_cluster() as cluster:
        with RayPool(cluster.address, tmp_path / "logs") as pool:
            workers = [pool.submit(where, node_labels={NODE_LABEL: role}).result(TASK_TIMEOUT)[1] for role in ("head", "second")]
        assert all(wait_gone(pid, timeout=30) for pid in workers), "the job's workers outlived the pool"
    assert not cluster.processes()
    assert not cluster.root.exists()


def test_a_cluster_without_token_authentication_is_refused_with_the_fix(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray's ports accept anyone unless the cluster runs with RAY_AUTH_MODE=token: such a cluster is refused, even by a
    driver that has a token to give (a token nobody asks for protects nothing)."""
    with ray_cluster(auth=False) as cluster:
        monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(token_file()))
        with pytest.raises(ClusterError, match="lets in a client that has no token") as refused:
            RayPool(cluster.address, tmp_path / "logs")
    assert "RAY_AUTH_MODE=token ray start" in str(refused.value) and "ray get-auth-token --generate" in str(refused.value)


def test_a_driver_without_the_token_is_refused_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ray_cluster() as cluster:
        monkeypatch.delenv("RAY_AUTH_TOKEN_PATH")
        monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ray/auth_token either
        with pytest.raises(ClusterError, match="has no Ray token") as refused:
            RayPool(cluster.address, tmp_path / "logs")
    assert "~/.ray/auth_token" in str(refused.value)
