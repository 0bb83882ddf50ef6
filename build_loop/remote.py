"""Build turns on a Ray cluster ([cluster] backend = "ray", with build.workers > 1).

    head  the code at the turn's base and canon at V as git bundles (content-addressed, made once each) -> a task on
          a node with a free agent slot (shared/ray_pool.py)
    node  a workspace of its own in a temp folder (banach.toml, canon and code from the bundles) and a Governor on a
          lane there: the whole governed turn, sandbox, fence, guards, cgroup, sensors and ratchet included, up to
          the keep. Its journal rows are collected, not written; a change it keeps comes back as a thin bundle
          base..candidate with the turn's files (prompt, output, result)
    head  the rows go into build's journal (build stays its one writer), the files into state/build/iterations/N,
          the candidate's objects into main, and the integrator judges it on main as it does a local lane's

The model gateway stays on the head with the provider's keys. For a rung with a provider the head opens the turn's
lease (its token, its budgets, computed from build's journal) before it ships the turn; the node's relay
(build_loop/gateway/node_relay.py) carries the agent's calls to the gateway's door on the head (gateway/door.py), which
lets in only that token. Every call is journaled on the head from the gateway's own record, whatever the node says.

A node that dies mid-turn (its raylet or machine gone, its worker killed): the head revokes the turn's token (a turn
still running there spends nothing more), journals the calls the gateway recorded for it and `cluster.turn_lost`, and
ships the turn again, with a new token, to any live node (Ray does not retry turns itself: a retry with the same token
would let the lost attempt go on spending). The head journals nothing else of a remote turn until it is back, so a
node or head lost mid-turn leaves nothing open and nothing kept. Where each turn runs, the nodes and the ones lost are
in state/build/cluster.json (shared/cluster_board.py) for status and the dashboard.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from build_loop.gateway.lease import Allowance
from build_loop.history import ItemHistory
from build_loop.integrator import Integration
from build_loop.lane_governor import LaneGovernor
from build_loop.lanes import Lane
from build_loop.sensors import Reading
from build_loop.turn import Options, Outcome, Shared, Spend, Turn
from canon.store import CanonStore
from shared.bundles import bundle_range, node_workspace
from shared.errors import ConfigError
from shared.git import Entry
from shared.journal import Row

CANDIDATE_REF = "refs/banach/candidate"


@dataclass(frozen=True)
class GatewayTicket:
    """What a node needs to reach the head's gateway for one turn: the door and the turn's token, never a key."""

    host: str
    port: int
    token: str
    provider: str
    upstream_model: str
    allowance: Allowance


@dataclass(frozen=True)
class RemoteTurn:
    """What a node needs for one turn: plain values and bundle bytes, nothing that points into the head."""

    config_text: str
    canon_bundle: bytes
    code_bundle: bytes
    base: str
    plan_json: str
    item_id: str
    history: ItemHistory
    n: int
    lane: int
    options: Options
    gateway: GatewayTicket | None = None  # the head's lease for this attempt, when the rung talks to a provider


class NoGateway:
    """A node's turn whose rung talks to no provider: the node never makes a gateway of its own (keys stay on the head)."""

    socket_path, port, url = Path("/nonexistent"), 0, ""

    def open_turn(self, provider: str, **_: Any) -> Any:
        raise ConfigError(f"this turn's rung talks to {provider!r} through the gateway, and the head sent no token for "
                          "it: the ladder differs between the head's banach.toml and the one shipped")

    def close(self, lease: Any, **_: Any) -> Any:
        return lease

    def stop(self) -> None:
        pass


def _relay(ticket: GatewayTicket | None, node: str) -> Any:
    if ticket is None:
        return NoGateway()
    from build_loop.gateway.node_relay import NodeRelay

    return NodeRelay((ticket.host, ticket.port), ticket.token, provider=ticket.provider,
                     upstream_model=ticket.upstream_model, allowance=ticket.allowance, node=node)


@dataclass
class RemoteResult:
    outcome: Outcome
    rows: list[tuple[str, dict[str, Any]]]
    files: dict[str, bytes]  # the turn's folder: prompt.md, output.txt, result.json, calls.jsonl
    node: str
    candidate: bytes | None = None  # the thin bundle base..candidate, when the lane kept a change
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)


class CollectingJournal:
    """A node's stand-in for build's journal: rows are kept in order and sent back to the head, which writes them."""

    def __init__(self) -> None:
        self.collected: list[tuple[str, dict[str, Any]]] = []

    def append(self, kind: str, data: dict[str, Any]) -> Row:
        self.collected.append((kind, data))
        return Row(len(self.collected), 0.0, kind, data, "", "", "", {})

    def rows(self, kind: str | None = None, **_: Any) -> list[Row]:
        return []  # a node reads no history: the head sent what the turn needs (ItemHistory)

    def last(self, kind: str) -> Row | None:
        return None

    def close(self) -> None:
        pass


class Handoff:
    """The integrator of a node's lane: records the kept change for the head instead of committing to main."""

    def __init__(self) -> None:
        self.kept: tuple[Turn, dict[str, Entry | None], Reading] | None = None

    def integrate(self, journal: object, turn: Turn, entries: dict[str, Entry | None], after: Reading,
                  trial: object = None) -> Integration:
        self.kept = (turn, entries, after)
        return Integration(None, "handed to the head", after, handed_off=True)


def run_remote_turn(task: RemoteTurn) -> RemoteResult:
    """On a node: the governed turn in a workspace of its own. Runs in a fresh Ray worker process. A worker whose raylet
    died under it (the node is being lost) sends back no result: the head runs the turn again elsewhere."""
    from shared.ray_pool import NodeLost, current_node_id, raylet_alive

    raylet = os.getppid()  # Ray's workers are the raylet's children

    with tempfile.TemporaryDirectory(prefix="banach-node-") as scratch:
        ws = node_workspace(Path(scratch), task.config_text, code_bundle=task.code_bundle,
                            canon_bundle=task.canon_bundle)
        bundles = Path(scratch) / "bundles"
        from shared.contracts.fix_plan import FixPlan

        plan = FixPlan.model_validate_json(task.plan_json)
        item = plan.open_item(task.item_id)
        assert item is not None, task.item_id
        collector, handoff = CollectingJournal(), Handoff()
        relay = _relay(task.gateway, current_node_id())
        governor = LaneGovernor(ws, task.options, lane=Lane.of(ws, task.lane), integrator=handoff,
                                shared=Shared(Spend(), journal=collector), gateway=relay)  # type: ignore[arg-type]
        try:
            canon = CanonStore(ws.canon).load()
            outcome = governor.lane_turn(plan, item, canon, task.history, task.n, task.base)
        finally:
            governor.close()
            relay.stop()
        if not raylet_alive(raylet):
            raise NodeLost(f"node {current_node_id()[:12]} lost its raylet during turn {task.n}; nothing of it is sent")
        folder = ws.role_dir("build") / "iterations" / str(task.n)
        files = {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()} if folder.is_dir() else {}
        result = RemoteResult(outcome, collector.collected, files, current_node_id())
        if handoff.kept is not None:
            turn, entries, after = handoff.kept
            lane_repo = governor.code
            commit, _ = lane_repo.commit_entries(task.base, entries, "a candidate from a cluster node", {}, role="build")
            result.candidate = bundle_range(lane_repo, task.base, commit, bundles).read_bytes()
            result.before, result.after = turn.before.as_json(), after.as_json()
        return result
