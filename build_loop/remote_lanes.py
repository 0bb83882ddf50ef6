"""The head's side of turns on a Ray cluster (build_loop/remote.py has the node's): one Ray pool for the run, the
bundles it ships, each attempt's gateway lease, the retries of a turn whose node was lost, and where each turn runs.

    attempt k of turn n:  lease (head) -> door.admit(token) -> task (max_retries 0) on a node with a free slot
        result     -> the gateway closes the token; finish(): the node's rows, the head's record of its calls, the
                      candidate through the integrator
        node lost  -> the token is revoked (door and gateway), the calls the gateway recorded are journaled with
                      `cluster.turn_lost`, and attempt k+1 goes out with a new token, up to [cluster] max_retries
        stopping   -> the task is cancelled, the token revoked, its calls journaled; nothing of it is kept
"""
from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from build_loop import budgets
from build_loop.gateway import uses_gateway
from build_loop.gateway.lease import Lease
from build_loop.history import ItemHistory
from build_loop.lane_governor import LaneGovernor
from build_loop.remote import CANDIDATE_REF, GatewayTicket, RemoteResult, RemoteTurn, run_remote_turn
from build_loop.sensors import Reading
from build_loop.turn import Outcome, Turn
from canon.model import Canon
from canon.store import CanonStore
from shared.bundles import bundle_commit, fetch_bundle
from shared.cluster_board import ClusterBoard
from shared.errors import ConfigError
from shared.git import Entry, GitRepo, RefState
from shared.workspace import Workspace

if TYPE_CHECKING:
    from build_loop.gateway.door import Door
    from build_loop.gateway.server import Gateway


class RemoteLanes:
    """The head's side: one Ray pool for the run, and the bundles it ships."""

    def __init__(self, ws: Workspace, gateway: Gateway | None = None) -> None:
        """gateway: build's, when a rung talks to a provider (its door is opened here, on the cluster's address)."""
        from shared.ray_pool import ClusterError, RayPool

        cluster = ws.config.cluster
        if not cluster.address:
            raise ConfigError(f"[cluster] backend is 'ray' in {ws.config_file} but no address is set: add "
                              "address = \"HOST:PORT\" (the head's GCS address that `ray start --head` printed)")
        if uses_gateway(ws) and gateway is None:
            raise ConfigError(f"[cluster] backend 'ray' in {ws.config_file}: a ladder rung talks to a provider, and "
                              "build-loop has no gateway for it (run with the configured preset, not --agent-command)")
        self.ws, self.gateway = ws, gateway
        self.bundles = ws.role_dir("build") / "bundles"
        self.pool = RayPool(cluster.address, ws.role_dir("build") / "ray", max_retries=0)
        self.lost_errors: tuple[type[BaseException], ...] = (ClusterError,)
        self.door: Door | None = None
        if gateway is not None:
            from build_loop.gateway.door import Door

            self.door = Door(gateway, cluster.gateway_host or self.pool.node_ip, cluster.gateway_port)
        self.board = ClusterBoard(ws.role_dir("build"), cluster.address, self.door.address if self.door else "",
                                  lambda: self.pool.nodes(dead=True))
        self._visible: dict[str, str] = {}  # canon commit -> its visible commit (canon/visible.py)
        self._visible_lock = threading.Lock()

    def open(self, first: Callable[[], None] = lambda: None) -> None:
        """Let nodes in at the gateway's door; `first` runs on its thread before (see Door.open)."""
        if self.door is not None:
            self.door.open(first)

    def close(self) -> None:
        if self.door is not None:
            self.door.stop()
        self.pool.shutdown()

    def turn(self, governor: LaneGovernor, plan: Any, item: Any, canon: Canon, history: ItemHistory, n: int,
             base: str) -> Outcome:
        """Ship the turn to a node, wait for it, and finish it here (journal, files, integration); again elsewhere,
        with a new token, when its node is lost."""
        cluster = self.ws.config.cluster
        shipped = (self.ws.config_file.read_text(), self._visible_canon(canon.commit), self._bundle(governor.main, base))
        for attempt in range(1, cluster.max_retries + 2):
            lease = self._lease(governor, item, canon, history, n)
            if isinstance(lease, Outcome):
                return lease
            task = RemoteTurn(*shipped, base, plan.model_dump_json(), item.id, history, n, governor.lane.number,
                              governor.options, self._ticket(lease))
            self.board.started(n, item.id, governor.lane.number, attempt)
            future = self.pool.submit(run_remote_turn, (task,), cpus=cluster.cpus_per_turn, max_retries=0)
            while not future.done():
                if governor.cancel.wait(0.5):  # build-loop is stopping: the node's worker is killed, nothing comes back
                    self.pool.cancel(future)
                    self._settle(governor, lease, n, item, canon, "")
                    self.board.ended(n)
                    return Outcome("abandoned", f"iteration {n} ({item.id}): build-loop was asked to stop; the cluster "
                                   "task was cancelled and nothing of it is kept", n, item.id)
            try:
                result: RemoteResult = future.result()
                self._refuse_from_the_dead(result.node)
            except self.lost_errors as exc:
                node = self._settle(governor, lease, n, item, canon, "")
                then = "retried on a live node" if attempt <= cluster.max_retries else "given up"
                governor.journal.append("cluster.turn_lost", {"n": n, "item": item.id, "lane": governor.lane.number,
                                                              "node": node, "attempt": attempt, "reason": str(exc)[:2000],
                                                              "then": then})
                self.board.lost(n, node, str(exc), then)
                continue
            except BaseException:
                self._settle(governor, lease, n, item, canon, "")
                self.board.ended(n)
                raise
            self.board.placed(n, result.node)
            self._settle(governor, lease, n, item, canon, result.node, journal=False)
            try:
                return finish(governor, plan, item, canon, history, n, base, result, lease)
            finally:
                self.board.ended(n)
        return Outcome("abandoned", f"iteration {n} ({item.id}): its node was lost {cluster.max_retries + 1} times; "
                       "nothing of it is kept ([cluster] max_retries)", n, item.id)

    def _refuse_from_the_dead(self, node: str) -> None:
        """A result from a node the cluster has given up for dead is not kept, whatever it says: the node vanished
        while its turn ran (its raylet gone, its worker left to finish alone), so the turn runs again elsewhere."""
        from shared.ray_pool import ClusterError

        if not any(known.id == node and known.alive for known in self.pool.nodes(dead=True)):
            raise ClusterError(f"the result came from node {node[:12]}, which the cluster lost while the turn ran there")

    def _lease(self, governor: LaneGovernor, item: Any, canon: Canon, history: ItemHistory, n: int) -> Lease | Outcome | None:
        """The attempt's lease within its budgets, opened on the head, when its rung talks to a provider."""
        rungs = self.ws.config.build.rungs
        preset = None if governor.options.agent_command else self.ws.config.agents.get(rungs[min(history.rung, len(rungs) - 1)])
        if preset is None or not preset.provider or self.gateway is None:
            return None
        gateway = self.ws.config.gateway
        spent = budgets.item_spent(governor.journal, item.id, canon.version) if (
            gateway.max_item_tokens or gateway.max_item_cost_usd) else (0, 0.0)
        allowance = budgets.allowance(gateway, spent, (governor.spend.tokens, governor.spend.cost))
        why, source = budgets.exhausted(allowance)
        if why:
            return budgets.spent(governor.journal, item.id, canon.version, history.attempts, why, source)
        folder = governor.dir / "iterations" / str(n)
        folder.mkdir(parents=True, exist_ok=True)
        lease = self.gateway.open_turn(preset.provider, upstream_model=preset.upstream_model, allowance=allowance,
                                       log=folder / "calls.jsonl")
        assert self.door is not None
        self.door.admit(lease, lambda node: self.board.placed(n, node))
        return lease

    def _ticket(self, lease: Lease | None) -> GatewayTicket | None:
        if lease is None or self.door is None:
            return None
        return GatewayTicket(self.door.host, self.door.port, lease.token, lease.provider, lease.upstream_model,
                             lease.allowance)

    def _settle(self, governor: LaneGovernor, lease: Lease | None, n: int, item: Any, canon: Canon, node: str, *,
                journal: bool = True) -> str:
        """The attempt is over: its token stops working everywhere; with journal, its calls go on the record now
        (a lost or cancelled attempt: no rows of it come back). Returns the node it ran on, as far as the head knows."""
        node = node or (self.door.node_of(lease) if self.door is not None and lease is not None else "")
        if lease is None or self.gateway is None:
            return node
        self.gateway.close(lease)
        if journal:
            journal_calls(governor, lease, n, item.id, canon.version, node)
        return node

    def _visible_canon(self, commit: str) -> bytes:
        """Canon as build exports it, held-back tests left out (canon/visible.py), as a bundle for the node."""
        from canon.visible import visible_commit
        from shared.checks.store import PlanStore

        with self._visible_lock:  # lanes ask at once; one commit per canon version is made, once
            repo = PlanStore(self.ws.role_dir("build") / "canon-visible.git").repo()
            if commit not in self._visible:
                scratch = self.ws.role_dir("build") / "tmp"
                scratch.mkdir(parents=True, exist_ok=True)
                self._visible[commit] = visible_commit(CanonStore(self.ws.canon).git, commit, repo, scratch)
            return self._bundle(repo, self._visible[commit])

    def _bundle(self, repo: GitRepo, rev: str) -> bytes:
        return bundle_commit(repo, rev, self.bundles).read_bytes()


def journal_calls(governor: LaneGovernor, lease: Lease, n: int, item: str, canon_version: int, node: str) -> None:
    """The gateway's own record of an attempt's calls into build's journal, counted against the run's spend."""
    for call in lease.calls:
        governor.journal.append("model.call", {"n": n, "item": item, "canon_version": canon_version, "node": node,
                                               **call.as_json()})
    governor.spend.add(lease.tokens, lease.cost_usd or 0.0)


def finish(governor: LaneGovernor, plan: Any, item: Any, canon: Canon, history: ItemHistory, n: int, base: str,
           result: RemoteResult, lease: Lease | None = None) -> Outcome:
    """On the head: a node's turn into build's journal and folders, and its kept change through the integrator. With
    lease, the turn's model calls are the gateway's record on the head, not the rows the node sent."""
    calls_journaled = lease is None
    for kind, data in result.rows:
        if kind == "model.call" and lease is not None:
            continue
        if kind == "iteration.ended" and lease is not None:
            if not calls_journaled:
                journal_calls(governor, lease, n, item.id, canon.version, result.node)
                calls_journaled = True
            data = {**data, "cost_usd": lease.cost_usd, "tokens": lease.tokens,
                    "model_calls": sum(1 for call in lease.calls if call.model_call)}
        governor.journal.append(kind, {**data, "node": result.node} if kind.startswith("iteration.") else data)
        if kind == "iteration.started" and not calls_journaled:  # the calls came after it
            assert lease is not None
            journal_calls(governor, lease, n, item.id, canon.version, result.node)
            calls_journaled = True
    if not calls_journaled:
        assert lease is not None
        journal_calls(governor, lease, n, item.id, canon.version, result.node)
    folder = governor.dir / "iterations" / str(n)
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in result.files.items():
        if name == "calls.jsonl" and lease is not None:
            continue  # the head's log of the calls, written by the gateway as they happened
        (folder / Path(name).name).write_bytes(content)
    if result.outcome.decision != "candidate" or result.candidate is None:
        return result.outcome
    scratch = governor.dir / "tmp" / f"iteration-{n}"
    scratch.mkdir(parents=True, exist_ok=True)
    bundle = scratch / "candidate.bundle"
    bundle.write_bytes(result.candidate)
    ref = f"{CANDIDATE_REF}/{n}"
    try:
        tip = fetch_bundle(governor.main, bundle, ref, base=base)  # verified; its objects now in main's store
        entries = changed_entries(governor.main, base, tip)  # from the commit itself, not from what the node said
        canon_dir = governor.measure.canon_snapshot(canon)
        project = governor.measure.environment(governor.main, base)
        turn = Turn(n, item, canon, plan, history, folder, scratch, base, RefState("", base, (), ()), canon_dir,
                    governor.measure.sensors(item, canon, canon_dir, project), Reading.from_json(result.before),
                    project, facts={**result.outcome.details.get("facts", {}), "node": result.node})
        if lease is not None:
            turn.facts.update({"cost_usd": lease.cost_usd, "tokens": lease.tokens,
                               "model_calls": sum(1 for call in lease.calls if call.model_call)})
        governor.code = governor.lane.repo(governor.main, base)  # the head's own lane K: the trial on main, unlocked
        return governor.integrate(turn, entries, Reading.from_json(result.after), turn.facts, governor._trial(turn, entries))
    finally:
        governor.main.command("update-ref", "-d", ref)
        shutil.rmtree(scratch, ignore_errors=True)


def changed_entries(repo: GitRepo, base: str, tip: str) -> dict[str, Entry | None]:
    """What the candidate changes against its base, path by path (None: removed)."""
    after = repo.tree_entries(tip)
    return {path: after.get(path) for path in repo.diff_names(base, tip)}
