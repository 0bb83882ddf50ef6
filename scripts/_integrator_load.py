"""The integrator under load: LANES lanes hand it kept changes back to back, as many concurrent turns whose agents
took no time would, and it is timed for how many keeps per minute it sustains (scripts/bench_parallel.py --integrator).

Each lane is a real LaneGovernor on its own lane (state/build/lanes/K) of a workspace with ITEMS independent items
(one file and one check each, the check run as a real sensor process): it takes the next item, resets its lane to
main's head, reads the item's sensor there, writes the item's file, reads the sensor again, and hands the change to
the one Integrator through the same path a governed turn takes after its fence (LaneGovernor._accept: its trial on
main outside the integrator's lock, then the integrator's compare-and-swap). What is left out is the agent, the
sandbox and the fence: what a turn costs before it has a change. With `think`, each lane first waits that long, as
a turn's agent would, so the rate is what concurrent turns of that length get kept. Reported: keeps per minute, and
how the integrations went (committed as judged in the lane, re-measured under the integrator's lock, rolled back).
"""
from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Load:
    lanes: int
    keeps: int
    seconds: float
    how: dict[str, int]

    @property
    def per_minute(self) -> float:
        return self.keeps / self.seconds * 60.0


def sustained(root: Path, *, lanes: int, seconds: float, think: float = 0.0) -> Load:
    """root: a workspace made by bench_parallel.make_workspace, measured once by plan. think: seconds each lane waits
    before each change, as an agent's turn would (0: back to back, the integrator's ceiling)."""
    from build_loop.fence import snapshot
    from build_loop.history import ItemHistory
    from build_loop.integrator import Integrator
    from build_loop.lane_governor import LaneGovernor
    from build_loop.lanes import Lane
    from build_loop.measure import Measurer
    from build_loop.turn import Options, Shared, Spend, Turn
    from canon.store import CanonStore
    from shared.checks.oracle import check_limits
    from shared.contracts.fix_plan import FixPlan
    from shared.git import GitRepo
    from shared.journal import Journal
    from shared.workspace import Workspace

    ws = Workspace.open(root)
    plan = FixPlan.model_validate_json(ws.fix_plan_json.read_text())
    canon_store = CanonStore(ws.canon)
    canon = canon_store.load()
    main = GitRepo.adopt(ws.code, ws.code_git)
    integrator = Integrator(main, Measurer(ws, canon_store, ws.role_dir("build"), check_limits(ws.config), tree=ws.code))
    todo: queue.SimpleQueue[Any] = queue.SimpleQueue()
    for item in plan.items:
        todo.put(item)
    how: Counter[str] = Counter()
    lock = threading.Lock()
    spend = Spend()
    started = time.monotonic()
    deadline = started + seconds
    numbers = iter(range(1, 1_000_000))
    stop = threading.Event()  # never set: each lane's think time is a wait on it

    def lane(number: int) -> None:
        with Journal.for_role(ws, "build") as journal:
            governor = LaneGovernor(ws, Options(), lane=Lane.of(ws, number), integrator=integrator,
                                    shared=Shared(spend, journal=journal))
            while time.monotonic() < deadline:
                if think:
                    stop.wait(think)
                try:
                    item = todo.get_nowait()
                except queue.Empty:
                    return
                with lock:
                    n = next(numbers)
                base = main.head()
                assert base is not None
                governor.code = governor.lane.repo(main, base)
                scratch = ws.role_dir("build") / "tmp" / f"load-{n}"
                scratch.mkdir(parents=True, exist_ok=True)
                canon_dir = governor.measure.canon_snapshot(canon)
                sensors = governor.measure.sensors(item, canon, canon_dir, None)
                before = governor.measure.at_checkpoint(base, sensors, canon_dir, scratch, None)
                path = item.scope[0]  # parts/pNN.txt, checked for the line "part NN"
                (governor.tree / path).parent.mkdir(parents=True, exist_ok=True)
                (governor.tree / path).write_text(f"part {Path(path).stem[1:]}\n")
                entries = snapshot(governor.code, (path,))
                after = governor.measure.read(sensors, canon_dir, scratch, None)
                turn = Turn(n, item, canon, plan, ItemHistory(), governor.dir / "iterations" / str(n), scratch, base,
                            governor.code.ref_state(), canon_dir, sensors, before, None)
                turn.folder.mkdir(parents=True, exist_ok=True)
                outcome = governor._accept(turn, entries, after, {})
                facts = outcome.details
                with lock:
                    how[outcome.decision] += 1
                    where = str(facts.get("remeasured_on_main", facts.get("integration", "")))
                    how[f"{outcome.decision}: {where or 'main had not moved'}"] += 1

    threads = [threading.Thread(target=lane, args=(k,)) for k in range(1, lanes + 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    return Load(lanes, how["keep"], elapsed, dict(how))
