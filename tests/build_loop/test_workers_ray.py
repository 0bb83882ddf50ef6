"""Build's parallel workers on a real two-node Ray cluster ([cluster] backend = "ray"), started by the test with
`ray start` on this machine (tests/helpers/ray_cluster.py). The agent is SIMULATED (tests/helpers/agents/parts.py).

What must hold: the example and a 12-item plan certify with turns run as cluster tasks, on both nodes; killing the
non-head node while a turn runs there loses nothing: Ray runs that turn again on the head, and the run certifies."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.workspace import Workspace
from tests.build_loop.test_workers import _agents, certify, parts_workspace, plan_once, start, turns
from tests.helpers.workspaces import example, git

pytest.importorskip("ray", reason="the Ray backend needs ray: pip install -e '.[cluster]'")
from tests.helpers.ray_cluster import RayCluster, ray_cluster  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    with ray_cluster() as started:
        yield started


def on_cluster(ws: Workspace, cluster: RayCluster, *, workers: int = 2, cpus: float = 1.0) -> Workspace:
    text = ws.config_file.read_text()
    if "workers =" not in text:
        text = text.replace("[build]", f"[build]\nworkers = {workers}", 1)
    ws.config_file.write_text(text + f'\n[cluster]\nbackend = "ray"\naddress = "{cluster.address}"\n'
                                     f"cpus_per_turn = {cpus}\n")
    return Workspace.open(ws.root)


@pytest.mark.landlock
def test_the_example_certifies_with_turns_on_the_cluster(tmp_path: Path, cluster: RayCluster) -> None:
    """Under Landlock: build-loop (the Ray driver) restricted to its own stores, each node's agent sandboxed."""
    ws = on_cluster(example(tmp_path, backend="landlock"), cluster)
    printed = "\n".join(certify(ws))
    assert f"turns run as tasks on the Ray cluster at {cluster.address}" in printed
    kept = [span for span in turns(ws) if span["decision"] == "keep"]
    assert len({span["item"] for span in kept}) == 5
    assert all(span["ended"].get("node") for span in kept)  # type: ignore[union-attr]
    assert git(ws.code, "status", "--porcelain") == ""


def test_twelve_items_certify_on_both_nodes(tmp_path: Path, cluster: RayCluster) -> None:
    ws = on_cluster(parts_workspace(tmp_path, 12, 2, sleep=0.5), cluster)
    certify(ws)
    kept = [span for span in turns(ws) if span["decision"] == "keep"]
    assert sorted(str(span["item"])[:4] for span in kept) == [f"P-{n:02d}" for n in range(1, 13)]
    assert len({span["ended"]["node"] for span in kept}) == 2  # type: ignore[index]  # the head and the second node


def test_plans_checks_run_on_the_cluster(tmp_path: Path, cluster: RayCluster) -> None:
    """plan-loop with [cluster] backend = "ray": the checks its memo does not answer run on a node, from bundles."""
    from tests.helpers.workspaces import custom

    ws = on_cluster(custom(tmp_path, "## W-1: where\npaths: w.txt\nchecks:\n  - pwd && test -f w.txt\n\nw.txt exists.\n",
                           "parts.py"), cluster)
    result = subprocess.run([sys.executable, "-m", "plan_loop", "once", "-w", str(ws.root)], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"plan-loop: checks run as tasks on the Ray cluster at {cluster.address}" in result.stderr
    assert "residual 1" in result.stdout
    plan = json.loads(ws.fix_plan_json.read_text())
    assert "banach-checks-" in plan["items"][0]["evidence"][0]["excerpt"]  # the node's own snapshot, not plan's


def test_killing_the_non_head_node_mid_turn_loses_nothing(tmp_path: Path, cluster: RayCluster) -> None:
    """Last in this file: the cluster has no second node after it."""
    ws = parts_workspace(tmp_path, 2, 2, sleep=6)
    tag = f"ray-kill-{time.monotonic_ns()}"
    ws.config_file.write_text(ws.config_file.read_text().replace("--sleep 6", f"--sleep 6 --tag {tag}"))
    ws = on_cluster(ws, cluster)
    plan_once(ws)
    head = git(ws.code, "rev-parse", "HEAD")
    proc = start("build-loop", "run", "-w", str(ws.root))
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 180
        while len(_agents(tag)) < 2:  # one turn on each node (each offers one CPU, a turn asks for one)
            assert time.monotonic() < deadline and proc.poll() is None, "the two turns never started"
            time.sleep(0.2)
        second = set(cluster.second.processes())
        doomed = [int(pid) for pid in _agents(tag) if _descends_from(int(pid), second)]
        assert len(doomed) == 1, "one of the two turns runs on the second node"
        cluster.kill_second()
        for pid in doomed:  # one machine stands in for two: the lost machine's agent dies with it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert git(ws.code, "rev-parse", "HEAD") == head
        assert proc.stdout is not None
        for line in proc.stdout:  # the run goes on: Ray runs the lost turn again, on the head
            lines.append(line.rstrip())
            if "waiting for plan-loop to re-measure" in line or time.monotonic() > deadline:
                break
    finally:
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=120)
        lines += rest.splitlines()
    printed = "\n".join(lines)
    assert printed.count(": keep: ") == 2, printed
    assert "CERTIFIED" in plan_once(ws)
    kept = [span for span in turns(ws) if span["decision"] == "keep"]
    assert len(kept) == 2 and len({span["ended"]["node"] for span in kept}) == 1  # type: ignore[index]  # the head


def _descends_from(pid: int, ancestors: set[int]) -> bool:
    while pid > 1:
        if pid in ancestors:
            return True
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False
