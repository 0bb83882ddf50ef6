"""The integrator: with lanes (build.workers > 1), the only writer of the code's main branch.

A lane keeps a change by its own sensors against the turn's base commit. Main may have moved since (other lanes'
changes kept meanwhile), so the change is applied onto main as it is now and judged again there:

    main still at the base  -> the tree judged in the lane is exactly the tree to commit: commit it
    a kept path also changed on main since the base -> conflict: rolled back, the item returns with that knowledge
    otherwise -> main's work tree shows the result (the branch does not move), the item's sensors and the ratchet
                 run on it against main's own reading; green and better: commit; else roll back

One integrator runs at a time, and the commit is journaled ('iteration.committing') before it is published, as for a
single worker: after a crash, recovery keeps it only if main is exactly that commit.

A train, so that one integrator keeps up with many lanes: the changes that arrive while it works wait together, and the
next one to take it takes them all. Those main can take as judged (still at their base, or measured in their lane on
main's head) go first, one by one. The rest, whose lanes measured them on a main that has moved since, are re-measured
together: each item's sensors on main, in parallel, then on main with all of them, in parallel, and each is judged by
the ratchet against main's own reading. All green and better: committed one after another, the last commit's tree
exactly the tree they were measured on. Any refused: it is rolled back, and the others are measured again without it.
"""
from __future__ import annotations

import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
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


@dataclass
class _Waiting:
    """One change waiting for the integrator, and what became of it."""

    turn: Turn
    entries: dict[str, Entry | None]
    after: Reading
    trial: Trial | None
    result: Integration | None = None
    error: BaseException | None = None


class Integrator:
    def __init__(self, code: GitRepo, measure: Measurer, *, train: int = 8) -> None:
        """train: how many changes that need re-measuring on main are measured together at most (1: one by one)."""
        self.code, self.measure = code, measure  # main's repository, and sensors that read main's work tree
        self.train = max(1, train)
        self._waiting: list[_Waiting] = []
        self._busy = False
        self._changed = threading.Condition()

    @property
    def busy(self) -> bool:
        """Whether the integrator is taken now: main will most likely move before a change measured now is taken up,
        and the train measures it again anyway, so a lane's trial would be spent for nothing."""
        with self._changed:
            return self._busy

    def integrate(self, journal: Journal, turn: Turn, entries: dict[str, Entry | None], after: Reading,
                  trial: Trial | None = None) -> Integration:
        """trial: the lane's measurement on main's head; used when main is still there (compare and swap), so the
        sensors need not run while the integrator is taken. Blocks until the change is committed or refused, by this
        thread or by the one that took the integrator with it waiting."""
        mine = _Waiting(turn, entries, after, trial)
        leader = False
        with self._changed:
            self._waiting.append(mine)
            self._changed.notify_all()
            while self._busy and mine.result is None and mine.error is None:
                self._changed.wait()
            if mine.result is None and mine.error is None:
                self._busy = leader = True
        try:
            while leader and mine.result is None and mine.error is None:
                with self._changed:
                    batch, self._waiting = self._waiting, []
                self._serve(journal, batch)  # this thread's journal connection (SQLite's are per thread)
                with self._changed:
                    self._changed.notify_all()  # the changes it decided go back to their lanes at once
        finally:
            if leader:
                with self._changed:
                    self._busy = False  # a change still waiting takes the integrator next
                    self._changed.notify_all()
        if mine.error is not None:
            raise mine.error
        assert mine.result is not None
        return mine.result

    def _serve(self, journal: Journal, batch: list[_Waiting]) -> None:
        """Each change that main can take as judged, in order; then the rest, re-measured together."""
        pending: list[_Waiting] = []
        for waiting in batch:
            try:
                result = self._at_once(journal, waiting)
            except BaseException as exc:  # noqa: BLE001 - raised in the thread that asked
                waiting.error = exc
                continue
            if result is None:
                pending.append(waiting)
            else:
                waiting.result = result
        while pending:
            group, pending = pending[:self.train], pending[self.train:]
            try:
                self._together(journal, group)
            except BaseException as exc:  # noqa: BLE001 - every change of the group failed with it
                for waiting in group:
                    if waiting.result is None:
                        waiting.error = exc

    def _at_once(self, journal: Journal, waiting: _Waiting) -> Integration | None:
        """Committed as judged, or a conflict; None when it must be re-measured on main."""
        turn, entries, after, trial = waiting.turn, waiting.entries, waiting.after, waiting.trial
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
        return None

    def _together(self, journal: Journal, group: list[_Waiting]) -> None:
        """Re-measure the group's changes on main at once; commit them all if each is green and better there."""
        while group:
            for waiting in group:  # what the earlier ones committed may clash with a later one
                waiting.result = self._at_once(journal, waiting)
            group = [waiting for waiting in group if waiting.result is None]
            paths: set[str] = set()
            apart = []
            for waiting in group:  # disjoint scopes make an overlap rare; one that overlaps waits for the next round
                if paths & set(waiting.entries):
                    continue
                paths |= set(waiting.entries)
                apart.append(waiting)
            if len(apart) == 1:
                main = self.code.head()
                assert main is not None
                apart[0].result = self._remeasure(journal, apart[0].turn, main, apart[0].entries)
            elif apart:
                self._train(journal, apart)
            group = [waiting for waiting in group if waiting.result is None]

    def _train(self, journal: Journal, group: list[_Waiting]) -> None:
        main = self.code.head()
        assert main is not None
        scratches = [waiting.turn.scratch / "integration" for waiting in group]
        for scratch in scratches:
            scratch.mkdir(parents=True, exist_ok=True)
        combined: dict[str, Entry | None] = {}
        for waiting in group:
            combined.update(waiting.entries)
        try:
            with ThreadPoolExecutor(len(group), thread_name_prefix="integrator") as pool:
                befores = list(pool.map(lambda w, s: self.measure.at_checkpoint(
                    main, w.turn.sensors, w.turn.canon_dir, s, w.turn.project), group, scratches))
                trial, _ = self.code.commit_entries(main, combined, f"a trial of {len(group)} changes on main", {},
                                                    role="build")
                self.code.check_out(trial)
                settled = list(pool.map(lambda w, s, b: self.measure.settle(
                    w.turn, self.measure.read(w.turn.sensors, w.turn.canon_dir, s, w.turn.project), self.code,
                    checkpoint=main, before=b, scratch=s), group, scratches, befores))
        except BaseException:
            self.code.rollback(main)
            raise
        finally:
            for scratch in scratches:
                shutil.rmtree(scratch, ignore_errors=True)
        refused = [refusal(s.before, s.after, unseen=w.turn.item.held_back) for w, s in zip(group, settled, strict=True)]
        if any(refused):
            self.code.rollback(main)
            for waiting, why, reading in zip(group, refused, settled, strict=True):
                if why:  # the others are measured again without it, in the next round
                    waiting.result = self._judge(journal, waiting.turn, main, waiting.entries, reading.before,
                                                 reading.after, f"by the integrator, with {len(group) - 1} other change(s)")
            return
        parent = main
        for waiting, reading in zip(group, settled, strict=True):
            commit = self._publish(journal, waiting.turn, parent, waiting.entries, reading.before, reading.after)
            waiting.result = Integration(commit, "", reading.after, {
                "integrated_on": main, "remeasured_on_main": f"by the integrator, with {len(group) - 1} other change(s)",
                "main_failing_before": reading.before.failing, "main_failing_after": reading.after.failing})
            parent = commit

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
