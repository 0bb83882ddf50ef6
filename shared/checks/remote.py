"""Plan's checks on a Ray cluster ([cluster] backend = "ray"), fanned out over the nodes.

    head  the pass builds its checks and looks each up in its memo as always; the ones left to run are dealt into
          batches ([cluster] check_batches, or one per live node), each a task spread over the nodes with the code at
          C and canon at V as git bundles (content-addressed, made once each)
    node  a workspace of its own in a temp folder: plan's object store filled from the bundles, a fresh snapshot of
          (C, V), the project's environment from the node's own cache (built there once per dependency set, used
          read-only: shared/environment), and the batch's checks run in the same sandboxed runner, each in a view of
          its own, that plan uses on its own machine
    head  the results are put back in the checks' order, memoized and judged by the pass, which writes fix_plan; nothing
          of a node is trusted beyond the outcomes of the checks it was sent (as a local runner's are)

The pass is one fresh, complete pass however it is spread: every check it built has exactly one result, from one run
against the same (C, V), or the pass fails (strict), and `plan-loop certify` still ignores the memo. A node lost
mid-pass: Ray runs that batch again from the start on a live node ([cluster] max_retries); the pass waits for it, as it
waits for a local runner.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.bundles import bundle_commit, node_workspace
from shared.checks import snapshot
from shared.checks.oracle import Check, Result, check_limits, run_checks
from shared.checks.store import PlanStore
from shared.git import GitRepo
from shared.workspace import Workspace


@dataclass(frozen=True)
class RemoteChecks:
    config_text: str
    code_bundle: bytes
    code_commit: str
    canon_bundle: bytes
    canon_commit: str
    checks: tuple[Check, ...]
    jobs: int


def run_on_node(task: RemoteChecks) -> list[Result]:
    """On a node: the checks against a fresh snapshot of (C, V) made from the bundles, in the project's environment
    from this node's cache. Runs in a fresh Ray worker."""
    from shared.environment import project_env
    from shared.isolation.kinds import Confine

    with tempfile.TemporaryDirectory(prefix="banach-checks-") as scratch:
        ws = node_workspace(Path(scratch), task.config_text, code_bundle=task.code_bundle,
                            canon_bundle=task.canon_bundle)
        code, canon = GitRepo(ws.code, git_dir=ws.code_git), GitRepo(ws.canon)
        config = ws.config.plan
        snap = snapshot.take(ws.role_dir("plan") / "scratch", PlanStore(ws.role_dir("plan") / "objects.git"), code,
                             task.code_commit, canon, task.canon_commit,
                             snapshot.Limits(config.export_max_bytes, config.export_max_files))
        try:
            store = PlanStore(ws.role_dir("plan") / "objects.git").repo()
            env = project_env(ws, "plan", store, task.code_commit, snap.code)
            return run_checks(list(task.checks), snap, jobs=task.jobs, memo=None,
                              confine=Confine(ws, "check", (snap.code,)), limits=check_limits(ws.config), env=env)
        finally:
            snapshot.release(snap)


class RemoteChecker:
    """The plan pass's side: one Ray pool for plan-loop's life, and the bundles it ships."""

    def __init__(self, ws: Workspace) -> None:
        from shared.ray_pool import RayPool

        self.ws = ws
        self.bundles = ws.role_dir("plan") / "bundles"
        self.pool = RayPool(ws.config.cluster.address, ws.role_dir("plan") / "ray",
                            max_retries=ws.config.cluster.max_retries)

    def close(self) -> None:
        self.pool.shutdown()

    def runner(self, code: GitRepo, code_commit: str, canon: GitRepo, canon_commit: str) -> Any:
        """What run_checks calls with the checks its memo did not answer."""
        def run(todo: list[Check]) -> list[Result]:
            shipped = (self.ws.config_file.read_text(), bundle_commit(code, code_commit, self.bundles).read_bytes(),
                       code_commit, bundle_commit(canon, canon_commit, self.bundles).read_bytes(), canon_commit)
            batches = deal(todo, self.batches())
            futures = [self.pool.submit(run_on_node, (RemoteChecks(*shipped, tuple(batch), self.ws.config.plan.jobs),),
                                        cpus=self.ws.config.cluster.cpus_per_turn, agent_slots=0, spread=True)
                       for batch in batches]
            return gather([future.result() for future in futures], len(todo))
        return run

    def batches(self) -> int:
        return self.ws.config.cluster.check_batches or max(1, sum(1 for node in self.pool.nodes()
                                                                  if node.resources.get("CPU", 0) > 0))


def deal(todo: list[Check], count: int) -> list[list[Check]]:
    """The checks dealt round the batches like cards: batch k holds checks k, k + count, ... (none empty)."""
    return [batch for batch in (todo[index::count] for index in range(max(1, count))) if batch]


def gather(results: list[list[Result]], total: int) -> list[Result]:
    """The batches' results back in the order of the checks they were dealt from; every check exactly one result."""
    count = len(results)
    ordered = [results[index % count][index // count] for index in range(total)]
    if sum(map(len, results)) != total:
        raise ValueError(f"the cluster's batches answered {sum(map(len, results))} checks of the {total} sent")
    return ordered
