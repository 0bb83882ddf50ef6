"""Real agents on a Ray cluster, behind the gateway (issue 44): a head and three nodes, each node in a network namespace
of its own (tests/helpers/ray_netns.py), so that no node reaches the head's loopback, with Ray's token authentication
on. The provider is the SCRIPTED MODEL SERVER (a labelled stand-in, no model is called) on the head's 127.0.0.1, which
no node can reach: every call a turn on a node makes goes through its node's relay to the gateway's door on the head,
and build-loop (on the head, the only holder of the provider's key, a canary the server insists on) journals it.

    the real claude and codex CLIs (pinned) each keep a change made on a node, every call journaled on the head
    a probe on a node hunts for the key (its environment, /proc, the workspace, HOME) and for the head's loopback:
        finds neither
    a node's raylet SIGKILLed while its turn waits on the model: nothing of that attempt is kept, its calls are on the
        record, the turn is run again on a live node with a new token, and status shows the node dead
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.dashboard import served
from tests.helpers.model_server import ModelServer, Script, Write
from tests.helpers.workspaces import HELPERS, cli, custom, git
from tests.realcli._governed import pinned as find_pinned  # reads the CLIs' cache before a test's HOME is made

pytest.importorskip("ray", reason="the Ray backend needs ray: pip install -e '.[cluster]'")
from tests.helpers.ray_netns import NetnsCluster, can_make_namespaces, netns_cluster, node_index  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.landlock, pytest.mark.root,
              pytest.mark.skipif(bool(can_make_namespaces()), reason=can_make_namespaces() or "")]
CANARY = "sk-CANARY-cluster-provider-key-4404"
MODEL = "scripted-model"
FILE, TEXT = "hello.txt", "hello from a node\n"
CANON = f"## W-1: greeting\npaths: {FILE}\nchecks:\n  - grep -qx 'hello from a node' {FILE}\n\n{FILE} greets.\n"
PROBE = HELPERS / "agents" / "gateway_agent.py"


@pytest.fixture(scope="module")
def cluster() -> Iterator[NetnsCluster]:
    with netns_cluster(3) as started:
        yield started


def workspace(tmp: Path, cluster: NetnsCluster, server: ModelServer, *, preset: str, command: str, wire: str,
              extra: str = "") -> Workspace:
    """banach.toml as a person writes it for a cluster: the preset through the gateway, gateway-only network, Ray."""
    ws = custom(tmp, CANON, "parts.py")
    base = server.url + ("/v1" if wire == "openai" else "")
    text = ws.config_file.read_text().replace('backend = "none"', 'backend = "landlock"')
    text = text.replace('agent = "scripted"', 'agent = "real"\nworkers = 2')
    text += (f'\n[agents.real]\npreset = "{preset}"\ncommand = {json.dumps(command)}\nprovider = "scripted"\n'
             + (f'model = "{MODEL}"\n' if preset != "command" else "") + extra +
             f'\n[gateway]\nnetwork = "gateway-only"\n\n[gateway.providers.scripted]\nwire = "{wire}"\n'
             f'base_url = "{base}"\nkey_env = "SCRIPTED_KEY"\n\n[gateway.prices.{MODEL}]\ninput = 3.0\noutput = 15.0\n'
             f'\n[cluster]\nbackend = "ray"\naddress = "{cluster.address}"\ncpus_per_turn = 0.25\n')
    ws.config_file.write_text(text)
    return Workspace.open(ws.root)


def loop_env(cluster: NetnsCluster) -> dict[str, str]:
    return {**cluster.driver_env(), "SCRIPTED_KEY": CANARY}


def plan_once(ws: Workspace, cluster: NetnsCluster) -> str:
    result = cli("plan-loop", "once", "--workspace", str(ws.root), env=cluster.driver_env(), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@contextlib.contextmanager
def build_run(ws: Workspace, cluster: NetnsCluster) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    proc = subprocess.Popen([sys.executable, "-m", "build_loop", "run", "--workspace", str(ws.root)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **loop_env(cluster)})
    lines: list[str] = []
    try:
        yield proc, lines
    finally:
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=180)
        lines += rest.splitlines()


def until(proc: subprocess.Popen[str], lines: list[str], text: str, timeout: float) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        lines.append(line.rstrip())
        if text in line or time.monotonic() > deadline:
            break
    assert any(text in line for line in lines), "\n".join(lines)


def journal(ws: Workspace, kind: str) -> list[dict[str, Any]]:
    with Journal(ws.journal_path("build"), readonly=True) as opened:
        return [row.data for row in opened.rows(kind)]


def node_ids(ws: Workspace) -> dict[str, str]:
    """Ray's node id -> its address, from what build-loop last wrote of the cluster."""
    board = json.loads((ws.role_dir("build") / "cluster.json").read_text())
    return {node["id"]: node["address"] for node in board["nodes"]}


def pinned(name: str) -> str:
    return str(find_pinned(name))


@pytest.mark.realcli
@pytest.mark.parametrize(("preset", "wire"), [("claude", "anthropic"), ("codex", "openai")])
def test_a_real_cli_keeps_a_change_made_on_a_node_and_every_call_is_journaled_on_the_head(
        tmp_path: Path, cluster: NetnsCluster, preset: str, wire: str) -> None:
    with ModelServer(Script.of(Write({FILE: TEXT}), api_key=CANARY)) as server:
        ws = workspace(tmp_path, cluster, server, preset=preset, command=pinned(preset), wire=wire)
        assert "residual 1" in plan_once(ws, cluster)
        with build_run(ws, cluster) as (proc, lines):
            until(proc, lines, ": keep: ", 400)
        requests = list(server.model_requests)
    printed = "\n".join(lines)
    assert "gateway's door for the nodes at" in printed, printed
    assert requests and all(r.api_key == CANARY for r in requests)  # only the head's gateway had the key
    [ended] = [row for row in journal(ws, "iteration.ended") if row["decision"] == "keep"]
    nodes = node_ids(ws)
    assert nodes[ended["node"]] != cluster.head.address  # made on a node, not the head
    calls = [row for row in journal(ws, "model.call") if row["n"] == ended["n"]]
    assert len(calls) == len(requests) and all(c["status"] == 200 and c["node"] == ended["node"] for c in calls), calls
    made = [c for c in calls if c["model_call"]]
    assert made and all(c["input_tokens"] > 0 and c["cost_usd"] > 0 for c in made)
    assert ended["model_calls"] == len(made) and ended["cost_usd"] == pytest.approx(sum(c["cost_usd"] for c in made))
    assert git(ws.code, "show", f"HEAD:{FILE}") == TEXT.strip()
    assert "CERTIFIED" in plan_once(ws, cluster)


def test_a_probe_on_a_node_finds_no_key_and_no_way_to_the_heads_loopback(tmp_path: Path, cluster: NetnsCluster) -> None:
    with ModelServer(Script.of(Write({FILE: TEXT}), api_key=CANARY)) as server:
        command = f"{sys.executable} {PROBE} --hunt --probe 127.0.0.1:{server.port} --probe {cluster.head.address}:{server.port}"
        ws = workspace(tmp_path, cluster, server, preset="command", command=command, wire="openai")
        plan_once(ws, cluster)
        with build_run(ws, cluster) as (proc, lines):
            until(proc, lines, ": keep: ", 300)
    [ended] = [row for row in journal(ws, "iteration.ended") if row["decision"] == "keep"]
    said = (ws.role_dir("build") / "iterations" / str(ended["n"]) / "output.txt").read_text()
    assert "hunted:" in said and "FOUND env BANACH_MODEL_TOKEN=" in said, said[-3000:]  # it looked
    assert CANARY not in said
    assert cluster.token_file.read_text().strip() not in said  # nor Ray's token: it could run code on every node
    assert f"BLOCKED 127.0.0.1:{server.port}" in said and f"BLOCKED {cluster.head.address}:{server.port}" in said
    assert node_ids(ws)[ended["node"]] != cluster.head.address
    assert len([c for c in journal(ws, "model.call") if c["n"] == ended["n"] and c["model_call"]]) == 2


def test_plans_checks_fan_out_over_the_nodes_each_building_its_environment_once(tmp_path: Path,
                                                                                cluster: NetnsCluster) -> None:
    """A project that needs a package: each node that gets a batch of checks builds the environment once, in its own
    cache, and uses it read-only in every check's view; a fresh pass (`plan-loop certify`) builds nothing again."""
    if not node_index():
        pytest.skip("the nodes reach no package index here (no /opt/pypi)")
    blocks = [f"## N-{n}: needs {n}\npaths: n{n}.txt\nchecks:\n  - python -c 'import iniconfig' && pwd && false\n\nn{n}.\n"
              for n in range(1, 7)]
    ws = custom(tmp_path, "\n".join(blocks), "parts.py")
    text = ws.config_file.read_text().replace('backend = "none"', 'backend = "landlock"')
    ws.config_file.write_text(text + f'\n[cluster]\nbackend = "ray"\naddress = "{cluster.address}"\ncpus_per_turn = 0.25\n')
    (ws.code / "requirements.txt").write_text("iniconfig\npytest\n")  # any pytest the nodes' local index has
    git(ws.code, "add", "requirements.txt")
    git(ws.code, "commit", "-qm", "needs iniconfig")
    said = plan_once(ws, cluster)
    assert "residual 6" in said, said
    plan = json.loads(ws.fix_plan_json.read_text())
    excerpts = [item["evidence"][0]["excerpt"] for item in plan["items"]]
    assert all("banach-checks-" in excerpt for excerpt in excerpts), excerpts  # iniconfig imported, on a node
    scratches = {excerpt.split("banach-checks-")[1][:8] for excerpt in excerpts}
    built = {node.name: json.loads(found.read_text())["built_at"] for node in cluster.nodes
             for found in node.cache.glob("banach/env/*/env.json")}
    assert len(scratches) >= 2 and len(built) >= 2, (scratches, built)  # spread: several nodes, each its own build
    certify = cli("plan-loop", "certify", "--workspace", str(ws.root), env=cluster.driver_env(), timeout=300)
    assert "residual 6" in certify.stdout, certify.stdout + certify.stderr
    again = {node.name: json.loads(found.read_text())["built_at"] for node in cluster.nodes
             for found in node.cache.glob("banach/env/*/env.json")}
    assert {name: again[name] for name in built} == built  # not built again where it was


def test_doctor_checks_the_cluster_its_token_and_every_node(tmp_path: Path, cluster: NetnsCluster) -> None:
    with ModelServer(Script.of(Write({FILE: TEXT}), api_key=CANARY)) as server:
        ws = workspace(tmp_path, cluster, server, preset="claude", command=pinned("claude"), wire="anthropic")
        doctor = cli("banach", "doctor", "--workspace", str(ws.root), env=cluster.driver_env(), timeout=300)
    said = doctor.stdout + doctor.stderr
    assert f"cluster: {cluster.address} refuses a client without the token (token authentication on)" in said, said
    for node in [cluster.head, *cluster.nodes]:
        line = next(line for line in said.splitlines() if f" {node.address}: Ray " in line)
        assert "Ray 2." in line and "agent slots" in line, line
        assert any(f" {node.address}: {pinned('claude')}: 2." in line for line in said.splitlines()), said


def test_a_node_killed_mid_turn_keeps_nothing_and_loses_nothing(tmp_path: Path, cluster: NetnsCluster) -> None:
    """Last in this file: one node is gone after it. The first attempt's agent waits on a slow answer when its node's
    raylet is killed; the turn runs again elsewhere with a new token and is kept once."""
    with ModelServer(Script.of(Write({FILE: TEXT}), api_key=CANARY)) as server:
        tag = f"cluster-kill-{time.monotonic_ns()}"
        command = f"{sys.executable} {PROBE} --calls 1 --pause 30 --tag {tag}"
        ws = workspace(tmp_path, cluster, server, preset="command", command=command, wire="openai")
        plan_once(ws, cluster)
        head = git(ws.code, "rev-parse", "HEAD")
        with build_run(ws, cluster) as (proc, lines):
            assert server.wait_for(lambda requests: len(requests) >= 1, timeout=240), "\n".join(lines)
            agents = _tagged(tag)  # the agent and the sandbox's wrappers around it
            doomed = cluster.node_of(agents[0])
            assert doomed is not None and doomed is not cluster.head
            assert all(cluster.node_of(pid) is doomed for pid in agents)
            cluster.kill_raylet(doomed)  # its agent goes on thinking there; the head revokes its token
            assert git(ws.code, "rev-parse", "HEAD") == head
            until(proc, lines, ": keep: ", 300)
        status = cli("banach", "status", "--workspace", str(ws.root)).stdout
        with served(ws) as at:  # the dashboard's overview says the same
            request = urllib.request.Request(at.base + "/", headers={"Authorization": f"Bearer {at.token}"})
            with urllib.request.urlopen(request, timeout=60) as response:
                overview = response.read().decode()
    for pid in agents:  # one machine stands in for four: what the lost node left running ends here
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    [lost] = journal(ws, "cluster.turn_lost")
    nodes = node_ids(ws)
    assert nodes[lost["node"]] == doomed.address and lost["then"] == "retried on a live node", lost
    kept = [row for row in journal(ws, "iteration.ended") if row["decision"] == "keep"]
    assert len(kept) == 1 and kept[0]["n"] == lost["n"] and kept[0]["node"] != lost["node"]
    assert len([row for row in journal(ws, "iteration.started") if row["n"] == lost["n"]]) == 1  # nothing of attempt 1
    calls = journal(ws, "model.call")
    assert len([c for c in calls if c["node"] == lost["node"]]) == 1  # the lost attempt's one call is on the record,
    assert len(calls) == len(server.requests)  # as is every call the provider saw: none after its token was revoked
    assert git(ws.code, "rev-list", "--count", f"{head}..HEAD") == "1"
    assert "DEAD" in status and "LOST" in status, status
    assert f"<td>{doomed.address}</td>" in overview and ">DEAD<" in overview and "LOST node" in overview, overview


def _tagged(tag: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", "--", f"--tag {tag}"], capture_output=True, text=True).stdout
    return [int(pid) for pid in out.split()]
