"""Plan's checks on a Ray cluster ([cluster] backend = "ray").

    head  the pass builds its checks and looks each up in its memo as always; the ones left to run go to a node with
          the code at C and canon at V as git bundles (content-addressed, made once each)
    node  a workspace of its own in a temp folder: plan's object store filled from the bundles, a fresh snapshot of
          (C, V), and the checks run there in the same sandboxed runner plan uses on its own machine
    head  the results are memoized and judged by the pass, which writes fix_plan; nothing of the node is trusted
          beyond the outcomes of the checks it was sent (as a local runner's are)

A node lost mid-pass: Ray runs the task again on a live node. The pass waits for it, as it waits for a local runner.
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
    """On a node: the checks against a fresh snapshot of (C, V) made from the bundles. Runs in a fresh Ray worker."""
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
            return run_checks(list(task.checks), snap, jobs=task.jobs, memo=None,
                              confine=Confine(ws, "check", (snap.code,)), limits=check_limits(ws.config))
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
            task = RemoteChecks(self.ws.config_file.read_text(), bundle_commit(code, code_commit, self.bundles).read_bytes(),
                                code_commit, bundle_commit(canon, canon_commit, self.bundles).read_bytes(), canon_commit,
                                tuple(todo), self.ws.config.plan.jobs)
            results: list[Result] = self.pool.submit(run_on_node, (task,), cpus=self.ws.config.cluster.cpus_per_turn,
                                                     agent_slots=0).result()
            return results
        return run
