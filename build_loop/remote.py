"""Build turns on a Ray cluster ([cluster] backend = "ray", with build.workers > 1).

    head  the code at the turn's base and canon at V as git bundles (content-addressed, made once each) -> a task on
          a node with a free agent slot (shared/ray_pool.py)
    node  a workspace of its own in a temp folder (banach.toml, canon and code from the bundles) and a Governor on a
          lane there: the whole governed turn, sandbox, fence, guards, cgroup, sensors and ratchet included, up to
          the keep. Its journal rows are collected, not written; a change it keeps comes back as a thin bundle
          base..candidate with the turn's files (prompt, output, result)
    head  the rows go into build's journal (build stays its one writer), the files into state/build/iterations/N,
          the candidate's objects into main, and the integrator judges it on main as it does a local lane's

A node that dies mid-turn: Ray runs the task again from the start on a live node. The head journals nothing of a
remote turn until it is back, so a head killed mid-turn leaves nothing open and nothing kept.

Not yet: the model gateway listens on the head's loopback, which a node cannot reach, so a rung with a provider is
refused under this backend (`_refuse_gateway`); plan's checks still run on the head.
"""
from __future__ import annotations

import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from build_loop.history import ItemHistory
from build_loop.integrator import Integration
from build_loop.lane_governor import LaneGovernor
from build_loop.lanes import Lane
from build_loop.sensors import Reading
from build_loop.turn import Options, Outcome, Shared, Spend, Turn
from canon.model import Canon
from canon.store import CanonStore
from shared.bundles import bundle_commit, bundle_range, fetch_bundle, node_workspace
from shared.errors import ConfigError
from shared.git import Entry, GitRepo, RefState
from shared.journal import Row
from shared.workspace import Workspace

CANDIDATE_REF = "refs/banach/candidate"


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
    """On a node: the governed turn in a workspace of its own. Runs in a fresh Ray worker process."""
    from shared.ray_pool import current_node_id

    with tempfile.TemporaryDirectory(prefix="banach-node-") as scratch:
        ws = node_workspace(Path(scratch), task.config_text, code_bundle=task.code_bundle,
                            canon_bundle=task.canon_bundle)
        bundles = Path(scratch) / "bundles"
        from shared.contracts.fix_plan import FixPlan

        plan = FixPlan.model_validate_json(task.plan_json)
        item = plan.open_item(task.item_id)
        assert item is not None, task.item_id
        collector, handoff = CollectingJournal(), Handoff()
        governor = LaneGovernor(ws, task.options, lane=Lane.of(ws, task.lane), integrator=handoff,
                                shared=Shared(Spend(), journal=collector))
        try:
            canon = CanonStore(ws.canon).load()
            outcome = governor.lane_turn(plan, item, canon, task.history, task.n, task.base)
        finally:
            governor.close()
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


class RemoteLanes:
    """The head's side: one Ray pool for the run, and the bundles it ships."""

    def __init__(self, ws: Workspace) -> None:
        from shared.ray_pool import RayPool

        cluster = ws.config.cluster
        if not cluster.address:
            raise ConfigError(f"[cluster] backend is 'ray' in {ws.config_file} but no address is set: add "
                              "address = \"HOST:PORT\" (the head's GCS address that `ray start --head` printed)")
        _refuse_gateway(ws)
        self.ws = ws
        self.bundles = ws.role_dir("build") / "bundles"
        self.pool = RayPool(cluster.address, ws.role_dir("build") / "ray", max_retries=cluster.max_retries)
        self._visible: dict[str, str] = {}  # canon commit -> its visible commit (canon/visible.py)
        self._visible_lock = threading.Lock()

    def close(self) -> None:
        self.pool.shutdown()

    def turn(self, governor: LaneGovernor, plan: Any, item: Any, canon: Canon, history: ItemHistory, n: int,
             base: str) -> Outcome:
        """Ship the turn to a node, wait for it, and finish it here (journal, files, integration)."""
        task = RemoteTurn(self.ws.config_file.read_text(), self._visible_canon(canon.commit),
                          self._bundle(governor.main, base), base, plan.model_dump_json(), item.id, history, n,
                          governor.lane.number, governor.options)
        cluster = self.ws.config.cluster
        future = self.pool.submit(run_remote_turn, (task,), cpus=cluster.cpus_per_turn)
        while not future.done():
            if governor.cancel.wait(0.5):  # build-loop is stopping: the node's worker is killed, nothing comes back
                self.pool.cancel(future)
                return Outcome("abandoned", f"iteration {n} ({item.id}): build-loop was asked to stop; the cluster task "
                               "was cancelled and nothing of it is kept", n, item.id)
        return finish(governor, plan, item, canon, history, n, base, future.result())

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


def finish(governor: LaneGovernor, plan: Any, item: Any, canon: Canon, history: ItemHistory, n: int, base: str,
           result: RemoteResult) -> Outcome:
    """On the head: a node's turn into build's journal and folders, and its kept change through the integrator."""
    for kind, data in result.rows:
        governor.journal.append(kind, {**data, "node": result.node} if kind.startswith("iteration.") else data)
    folder = governor.dir / "iterations" / str(n)
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in result.files.items():
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
        return governor.integrate(turn, entries, Reading.from_json(result.after), turn.facts)
    finally:
        governor.main.command("update-ref", "-d", ref)
        shutil.rmtree(scratch, ignore_errors=True)


def changed_entries(repo: GitRepo, base: str, tip: str) -> dict[str, Entry | None]:
    """What the candidate changes against its base, path by path (None: removed)."""
    after = repo.tree_entries(tip)
    return {path: after.get(path) for path in repo.diff_names(base, tip)}


def _refuse_gateway(ws: Workspace) -> None:
    with_provider = [rung for rung in ws.config.build.rungs if rung in ws.config.agents and ws.config.agents[rung].provider]
    if with_provider:
        raise ConfigError(f"[cluster] backend 'ray' in {ws.config_file}: the ladder rung(s) {', '.join(with_provider)} talk to "
                          "a provider through the model gateway, which listens on the head's loopback and cannot be "
                          "reached from a node yet. Use backend 'local' for them, or a preset without 'provider'.")
