"""A parallel worker's governor (build.workers > 1): the whole governed turn, in a lane instead of the code's work tree,
and a kept change handed to the integrator, the one writer of main, instead of committed onto main."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Protocol

from build_loop.governor import Governor
from build_loop.history import ItemHistory
from build_loop.integrator import Integration, Trial, measure_onto
from build_loop.lanes import BRANCH, Lane
from build_loop.sensors import Reading
from build_loop.turn import Options, Outcome, Shared, Turn
from canon.model import Canon
from shared.atomic import write_json
from shared.contracts.fix_plan import FixPlan, Item
from shared.git import Entry
from shared.workspace import Workspace

if TYPE_CHECKING:
    from build_loop.gateway.server import Gateway  # aiohttp: imported only when a rung uses the gateway


class Integrates(Protocol):
    def integrate(self, journal: Any, turn: Turn, entries: dict[str, Entry | None], after: Reading,
                  trial: Trial | None = ...) -> Integration: ...


class LaneGovernor(Governor):
    def __init__(self, ws: Workspace, options: Options, *, lane: Lane, integrator: Integrates, shared: Shared,
                 cancel: threading.Event | None = None, gateway: Gateway | None = None) -> None:
        super().__init__(ws, options, cancel=cancel, gateway=gateway, shared=shared)
        self.lane, self.integrator, self.lane_number = lane, integrator, lane.number
        self.tree = lane.tree
        self.measure.tree = lane.tree

    def lane_turn(self, plan: FixPlan, item: Item, canon: Canon, history: ItemHistory, n: int, base: str) -> Outcome:
        """One turn in this lane, from base, numbered n by the scheduler (build_loop/workers.py)."""
        self.code = self.lane.repo(self.main, base)
        return self._turn(plan, item, canon, history, n)

    def _accept(self, turn: Turn, entries: dict[str, Entry | None], after: Reading, facts: dict[str, Any]) -> Outcome:
        self.code.rollback(turn.checkpoint)  # the lane is done with it: the entries are blobs already
        return self.integrate(turn, entries, after, facts, self._trial(turn, entries))

    def _trial(self, turn: Turn, entries: dict[str, Entry | None]) -> Trial | None:
        """When main has moved since the turn's base: the item's sensors on main's head and on main + the change,
        measured here in the lane, so that the integrator, whose lock one lane at a time holds, need not run them
        (it uses them only if main is still at that head). None when main has not moved or a kept path clashes."""
        main = self.main.head()
        if main is None or main == turn.checkpoint or set(entries) & set(self.main.diff_names(turn.checkpoint, main)):
            return None
        if getattr(self.integrator, "busy", False):  # main moves on meanwhile: the integrator's train measures it
            return None
        scratch = turn.scratch / "trial"
        scratch.mkdir(parents=True, exist_ok=True)
        try:
            self.code.reset_branch(BRANCH, main)
            return Trial(main, *measure_onto(self.code, self.measure, turn, main, entries, scratch))
        finally:
            self.code.rollback(main)

    def integrate(self, turn: Turn, entries: dict[str, Entry | None], after: Reading, facts: dict[str, Any],
                  trial: Trial | None = None) -> Outcome:
        """The kept change onto main by the integrator: kept there, or rolled back as an attempt that failed."""
        integration = self.integrator.integrate(self.journal, turn, entries, after, trial)
        if integration.handed_off:  # a turn on a cluster node: the head integrates it (build_loop/remote.py)
            return Outcome("candidate", f"iteration {turn.n} ({turn.item.id}): kept in its lane; handed to the head",
                           turn.n, turn.item.id, None, turn.facts.get("cost_usd"), None, {"facts": facts})
        facts = {**facts, **integration.facts}
        if integration.commit is None:
            excerpt = "\n".join(integration.after.excerpts.values())[-3000:]
            return self._failed(turn, "rollback", integration.reason, **facts, excerpt=excerpt,
                                feedback=integration.after.excerpts)
        write_json(self.dir / "readings" / "last-kept.json", {"commit": integration.commit,
                                                               **integration.after.as_json()})
        return self._end(turn, "keep", f"failing {len(turn.before.failing)} -> {len(after.failing)}", **facts,
                         commit=integration.commit)
