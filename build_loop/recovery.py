"""Closing the iterations a crash left open.

'iteration.started' is journaled before the agent runs and 'iteration.ended' after the decision; a keep journals
'iteration.committing' (commit, tree, parent) before it publishes. Only that record counts: the keep is recorded when
HEAD is exactly the journaled commit; anything else (a trailer, a ref, a lock file the agent could have made) is
rolled back.

A single worker's turn ran in the code's own work tree: its refs and work tree go back to the checkpoint. A lane's
turn (build.workers > 1) ran in the lane, which is reset before its next turn anyway; only the integrator wrote
main, so main's work tree goes back to main's HEAD (an integration may have been measuring a candidate there).
With several lanes, several iterations may be open at once: each is closed."""
from __future__ import annotations

from build_loop import guards
from build_loop.turn import Outcome
from shared.contracts import current_turn
from shared.git import GitRepo
from shared.journal import Journal, Row


def open_iterations(journal: Journal) -> list[Row]:
    ended = {row.data.get("n") for row in journal.rows("iteration.ended")}
    return [row for row in journal.rows("iteration.started") if row.data["n"] not in ended]


def recover(journal: Journal, code: GitRepo) -> Outcome | None:
    """Close every open iteration; the Outcome of the last one closed, or None when none was open."""
    # no turn runs while recovery does (the iteration lock): a turn record left beside the journal is a crash's
    current_turn.ended_all(journal.path.parent)
    outcome = None
    latest = journal.last("iteration.started")
    for started in open_iterations(journal):
        # a single worker's iteration left open below a later one (a journal from an older version) has nothing in
        # the work tree any more: closing it must not move the code back to its checkpoint
        touch = started.data.get("lane") is not None or (latest is not None and started.seq == latest.seq)
        outcome = _close(journal, code, started, touch_git=touch)
    return outcome


def _landed(journal: Journal, code: GitRepo, started: Row) -> str | None:
    """The commit this iteration journaled and published before the crash, or None."""
    n = started.data["n"]
    intent = next((row for row in reversed(journal.rows("iteration.committing"))
                   if row.data.get("n") == n and row.seq > started.seq), None)
    head = code.head()
    if head is None or intent is None or head != intent.data["commit"]:
        return None
    tree, parents = code.commit_parts(head)
    return head if tree == intent.data["tree"] and parents == (intent.data["parent"],) else None


def _close(journal: Journal, code: GitRepo, started: Row, *, touch_git: bool) -> Outcome:
    data = started.data
    n, checkpoint, lane = data["n"], data["checkpoint"], data.get("lane")
    where = {"n": n, "item": data["item"], "plan_pass": data.get("plan_pass"),
             **({"lane": lane} if lane is not None else {})}
    head = _landed(journal, code, started)
    if head is not None:
        code.rollback(head)  # the work tree may hold what a sensor wrote before the crash
        journal.append("iteration.ended", {**where, "decision": "keep", "commit": head,
                                           "reason": "recovered: the journaled commit landed before the crash"})
        return Outcome("keep", f"iteration {n} had committed before it was interrupted; recorded the keep", n,
                       data["item"], head)
    if not touch_git:
        said = "closed without touching the code (a later iteration followed it)"
    elif lane is None:
        code.restore_refs(guards.refs_from_json(data["refs"], checkpoint))
        code.rollback(checkpoint)
        said = f"rolled back to checkpoint {checkpoint[:12]}"
    else:
        main = code.head()
        assert main is not None
        code.rollback(main)
        said = f"lane {lane}'s work is dropped; main stays at {main[:12]}"
    journal.append("iteration.ended", {**where, "decision": "interrupted",
                                       "reason": f"build-loop stopped mid-iteration; {said}"})
    return Outcome("interrupted", f"iteration {n} was interrupted; {said}", n, data["item"])
