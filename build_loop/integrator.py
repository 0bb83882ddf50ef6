"""The integrator: with lanes (build.workers > 1), the only writer of the code's main branch.

A lane keeps a change by its own sensors against the turn's base commit. Main may have moved since (other lanes'
changes kept meanwhile), so the change is applied onto main as it is now and judged again there:

    main still at the base  -> the tree judged in the lane is exactly the tree to commit: commit it
    a kept path also changed on main since the base -> conflict: rolled back, the item returns with that knowledge
    otherwise -> main's work tree shows the result (the branch does not move), the item's sensors and the ratchet
                 run on it against main's own reading; green and better: commit; else roll back

One integration at a time (a lock), and the commit is journaled ('iteration.committing') before it is published,
as for a single worker: after a crash, recovery keeps it only if main is exactly that commit.
"""
from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from build_loop.measure import Measurer
from build_loop.sensors import Reading, refusal, regressions
from build_loop.turn import Turn
from shared.contracts import trailers
from shared.git import Entry, GitRepo
from shared.journal import Journal


@dataclass(frozen=True)
class Integration:
    commit: str | None  # the commit now on main, or None: rolled back
    reason: str
    after: Reading  # main's reading with the change (the lane's when main had not moved)
    facts: dict[str, Any] = field(default_factory=dict)
    handed_off: bool = False  # on a cluster node: the head integrates (build_loop/remote.py)


def commit_message(turn: Turn, before: Reading, after: Reading) -> tuple[str, dict[str, str]]:
    item = turn.item
    partial = f" (partial: {len(after.failing)} checks still failing)" if after.failing else ""  # the item stays open
    if item.held_back:  # build cannot see the held-back tests: plan's next pass says whether the item is done
        partial = partial or " (held-back tests: for plan to judge)"
    message = (f"{item.kind} {item.id}{partial}: {item.title}\n\n"
               f"Kept by the governor: failing {len(before.failing)} -> {len(after.failing)}"
               + (" of the checks build can see; plan's held-back tests judge the rest." if item.held_back else "."))
    return message, {trailers.ITEM: item.id, trailers.CANON_VERSION: str(turn.canon.version),
                     trailers.ITERATION: str(turn.n)}


@dataclass(frozen=True)
class Trial:
    """A lane's own measurement of its change applied onto main's head `main`, taken outside the integrator's lock:
    the item's sensors on main (before) and on exactly the tree main + the change (after)."""

    main: str
    before: Reading
    after: Reading


class Integrator:
    def __init__(self, code: GitRepo, measure: Measurer) -> None:
        self.code, self.measure = code, measure  # main's repository, and sensors that read main's work tree
        self.lock = threading.Lock()

    def integrate(self, journal: Journal, turn: Turn, entries: dict[str, Entry | None], after: Reading,
                  trial: Trial | None = None) -> Integration:
        """trial: the lane's measurement on main's head; used when main is still there (compare and swap), so the
        sensors need not run under the lock."""
        with self.lock:
            main = self.code.head()
            assert main is not None
            if main == turn.checkpoint:
                commit = self._publish(journal, turn, main, entries, turn.before, after)
                return Integration(commit, "", after, {"integrated_on": main, "remeasured_on_main": False})
            clash = sorted(set(entries) & set(self.code.diff_names(turn.checkpoint, main)))
            if clash:
                return Integration(None, f"integration: {', '.join(clash[:5])} also changed on main since the turn's "
                                   f"base {turn.checkpoint[:12]}; rolled back, to be tried again from main {main[:12]}",
                                   after, {"integration": "conflict", "integrated_on": main, "conflicts": clash})
            if trial is not None and trial.main == main:
                return self._judge(journal, turn, main, entries, trial.before, trial.after, "in its lane")
            return self._remeasure(journal, turn, main, entries)

    def _remeasure(self, journal: Journal, turn: Turn, main: str, entries: dict[str, Entry | None]) -> Integration:
        scratch = turn.scratch / "integration"
        scratch.mkdir(parents=True, exist_ok=True)
        try:
            before, after = measure_onto(self.code, self.measure, turn, main, entries, scratch)
        except BaseException:
            self.code.rollback(main)
            raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return self._judge(journal, turn, main, entries, before, after, "by the integrator")

    def _judge(self, journal: Journal, turn: Turn, main: str, entries: dict[str, Entry | None], before: Reading,
               after: Reading, where: str) -> Integration:
        """The ratchet on main: green and better than main's own reading is committed, anything else refused."""
        facts = {"integrated_on": main, "remeasured_on_main": where, "main_failing_before": before.failing,
                 "main_failing_after": after.failing}
        broke = regressions(before, after)
        if refusal(before, after, unseen=turn.item.held_back):  # held-back tests: only plan sees their progress
            self.code.rollback(main)
            why = (f"{len(broke)} check(s) green on main went red with it ({', '.join(broke[:5])})" if broke else
                   f"no progress on main: {len(after.failing)} failing after, {len(before.failing)} before")
            return Integration(None, f"integration onto main {main[:12]}: {why}; rolled back", after,
                               {**facts, "integration": "red", "main_regressions": broke})
        return Integration(self._publish(journal, turn, main, entries, before, after), "", after, facts)

    def _publish(self, journal: Journal, turn: Turn, main: str, entries: dict[str, Entry | None], before: Reading,
                 after: Reading) -> str:
        return publish_keep(self.code, journal, turn, main, entries, before, after)


def measure_onto(repo: GitRepo, measure: Measurer, turn: Turn, main: str, entries: dict[str, Entry | None],
                 scratch: Path) -> tuple[Reading, Reading]:
    """The item's sensors on main (repo's work tree must show main) and on exactly main + the change, which is left
    checked out (the branch does not move): the caller rolls back or publishes."""
    before = measure.at_checkpoint(main, turn.sensors, turn.canon_dir, scratch, turn.project)
    trial, _ = repo.commit_entries(main, entries, "a trial on main", {}, role="build")
    repo.check_out(trial)
    settled = measure.settle(turn, measure.read(turn.sensors, turn.canon_dir, scratch, turn.project), repo, checkpoint=main,
                             before=before, scratch=scratch)  # a check that flips on main's trial tree judges nothing
    return settled.before, settled.after


def publish_keep(code: GitRepo, journal: Journal, turn: Turn, parent: str, entries: dict[str, Entry | None],
                 before: Reading, after: Reading) -> str:
    """The keep: a commit of parent's tree with the entries, journaled ('iteration.committing') before the branch
    moves to it, only if the branch is still at parent. After a crash, recovery keeps it only if HEAD is that commit."""
    commit, tree = code.commit_entries(parent, entries, *commit_message(turn, before, after), role="build")
    journal.append("iteration.committing", {"n": turn.n, "item": turn.item.id, "commit": commit, "tree": tree,
                                            "parent": parent})
    code.publish(commit, parent)
    return commit
