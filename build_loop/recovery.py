"""Closing an iteration a crash left open.

'iteration.started' is journaled before the agent runs and 'iteration.ended' after the decision; a keep journals
'iteration.committing' (commit, tree, parent) before it publishes. Only that record counts: the keep is recorded when
HEAD is exactly the journaled commit; anything else (a trailer, a ref, a lock file the agent could have made) is
rolled back to the checkpoint."""
from __future__ import annotations

from build_loop import guards
from build_loop.turn import Outcome
from shared.contracts import current_turn
from shared.git import GitRepo
from shared.journal import Journal


def recover(journal: Journal, code: GitRepo) -> Outcome | None:
    # no turn runs while recovery does (the iteration lock): a turn record left beside the journal is a crash's
    current_turn.ended(journal.path.parent)
    started = journal.last("iteration.started")
    if started is None:
        return None
    ended = journal.last("iteration.ended")
    if ended is not None and ended.seq > started.seq:
        return None
    data = started.data
    n, checkpoint = data["n"], data["checkpoint"]
    intent = journal.last("iteration.committing")
    head = code.head()
    if head is not None and intent is not None and intent.seq > started.seq and head == intent.data["commit"]:
        tree, parents = code.commit_parts(head)
        if tree == intent.data["tree"] and parents == (intent.data["parent"],):
            code.rollback(head)  # the work tree may hold what a sensor wrote before the crash
            journal.append("iteration.ended", {"n": n, "item": data["item"], "decision": "keep", "commit": head,
                                               "reason": "recovered: the journaled commit landed before the crash",
                                               "plan_pass": data.get("plan_pass")})
            return Outcome("keep", f"iteration {n} had committed before it was interrupted; recorded the keep", n,
                           data["item"], head)
    code.restore_refs(guards.refs_from_json(data["refs"], checkpoint))
    code.rollback(checkpoint)
    journal.append("iteration.ended", {"n": n, "item": data["item"], "decision": "interrupted",
                                       "reason": "build-loop stopped mid-iteration; work tree rolled back to the checkpoint",
                                       "plan_pass": data.get("plan_pass")})
    return Outcome("interrupted", f"iteration {n} was interrupted; rolled back to checkpoint {checkpoint[:12]}", n,
                   data["item"])
