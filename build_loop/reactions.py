"""Build's reactions to the monitor's diagnosis, each journaled with its evidence once per canon version:

  stalled      climb the ladder for the items stuck in the stalled area, and ask plan for a demolish item
  oscillating  pause: canon has no fixed point; name the requirements in the cycle; resume on a new version
  flat         say that the target or the context is the problem, not the model
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shared.contracts.fix_plan import FixPlan
from shared.journal import Journal
from shared.monitor.series import diagnose_segment, read_history
from shared.workspace import Workspace

FLAT_ADVICE = ("flat from the start: the target or the context is the problem, not the model. Check that the "
               "checks can pass, that the prompt shows what is judged (build-loop report N --prompt), and that "
               "items are small enough.")


@dataclass(frozen=True)
class Reaction:
    label: str
    message: str
    pause: bool = False


def _flagged(journal: Journal, label: str, canon_version: int) -> bool:
    return any(row.data.get("label") == label and row.data.get("canon_version") == canon_version
               for row in journal.rows("monitor.flag"))


def react(ws: Workspace, journal: Journal, plan: FixPlan, ladder: tuple[str, ...],
          rung_of: Callable[[str], int]) -> Reaction | None:
    """rung_of(item id) is asked only for items a stall climbs, since it reads the item's whole history."""
    segment = read_history(ws).current_segment()
    if not segment or segment[-1].canon_version != plan.canon_version:
        return None
    diagnosis = diagnose_segment(segment)
    label, version = diagnosis.label, plan.canon_version
    if label not in ("stalled", "oscillating", "flat"):
        return None
    evidence = {"label": label, "canon_version": version, "reason": diagnosis.reason,
                "residuals": [p.residual for p in segment][-12:], "q": diagnosis.as_json()["q"],
                "requirements": list(diagnosis.cycling_requirements), "plan_pass": plan.pass_seq}
    first_time = not _flagged(journal, label, version)
    if first_time:
        journal.append("monitor.flag", evidence)
    if label == "oscillating":
        names = ", ".join(diagnosis.cycling_requirements) or "the requirements in the cycle"
        message = (f"build paused: the loop oscillates ({diagnosis.reason}); {names} conflict, so canon has no "
                   "fixed point. Fix canon (make them compatible or drop one) and build resumes on the new version.")
        if first_time:
            journal.append("paused", {"canon_version": version, "requirements": list(diagnosis.cycling_requirements),
                                      "message": message})
        return Reaction(label, message, pause=True)
    if not first_time:
        return None
    if label == "flat":
        return Reaction(label, "monitor: " + FLAT_ADVICE)
    window = segment[-5:]
    stuck = set.intersection(*(set(p.items) for p in window)) if window else set()
    areas = sorted({item.area for item in plan.items if item.id in stuck and item.area})
    for area in areas:
        journal.append("demolish.requested", {"area": area, "canon_version": version, "reason": diagnosis.reason,
                                              "items": sorted(i.id for i in plan.items if i.area == area and i.id in stuck)})
    climbed = []
    for item in plan.items:
        if item.id not in stuck:
            continue
        rung = rung_of(item.id)
        if rung + 1 < len(ladder):
            journal.append("ladder.climb", {"item": item.id, "from": rung, "to": rung + 1, "reason": "monitor: stalled",
                                            "from_agent": ladder[rung], "to_agent": ladder[rung + 1]})
            climbed.append(f"{item.id} to {ladder[rung + 1]}")
    # Say what was done, and only that: a one-rung ladder or an item already on the top rung climbs nothing
    if not stuck:
        done = "no item stayed open through the last passes, so there is nothing to demolish or climb"
    else:
        demolish = (f"asked plan to demolish and rebuild area {', '.join(areas)}" if areas
                    else "no demolish asked: the stuck items name no area")
        if climbed:
            climb = f"climbed the ladder for {', '.join(climbed)}"
        elif len(ladder) == 1:
            climb = (f"the ladder has one rung ({ladder[0]}), so nothing to climb: add a stronger rung to "
                     "build.ladder in banach.toml")
        else:
            climb = (f"the stuck items are on the top rung ({ladder[-1]}) already, so nothing to climb: add a "
                     "stronger rung to build.ladder in banach.toml")
        done = f"{demolish}; {climb}"
    return Reaction(label, f"monitor: stalled ({diagnosis.reason}); {done}")
