"""What will get in the way, said once when a requirement lands or changes how it is measured, before a turn is spent:
the tamper scan's hits already in the code its paths match, and no sealed cases where its pass would rest on tests
or exit codes (the dry run itself, spec_loop/dry_run.py, runs the change's new checks)."""
from __future__ import annotations

from collections.abc import Sequence

from canon.model import Document, Requirement
from canon.store import CanonStore
from shared.checks.store import PlanStore
from shared.errors import ExportError, GitError
from shared.git import is_repo
from shared.measurement import tamper
from shared.workspace import Workspace


def unsealed(previous: dict[str, Requirement], proposed: dict[str, Requirement]) -> tuple[str, ...]:
    """Once, when a change adds a measured requirement without sealed cases, or changes how one is measured: what
    its pass would rest on, and an example of the cases that would make the code compute its answers."""
    def measures(req: Requirement) -> tuple[object, ...]:
        return req.tests, req.held_back, req.checks, req.sealed

    bare = [rid for rid, req in sorted(proposed.items()) if req.measured and not req.sealed
            and (rid not in previous or measures(previous[rid]) != measures(req))]
    if not bare:
        return ()
    return (f"note: {', '.join(bare)} {'has' if len(bare) == 1 else 'have'} no sealed cases, so a pass rests on "
            "in-process tests (code that knows their names or values can forge them) or exit codes (the code decides). "
            "Sealed cases give the code inputs only and compare its answers outside its process: add "
            f"`sealed: sealed/{bare[0].lower()}.json` to the requirement and the file, such as "
            '{"call": "pkg.module.function", "cases": [{"args": ["input"], "returns": "answer"}]} (docs/canon.md, '
            '"Sealed cases")',)


def standing_hits(ws: Workspace, store: CanonStore, documents: Sequence[Document]) -> tuple[str, ...]:
    """What will get in the way, said once per requirement (when the change adds it, or changes its paths or allows):
    the tamper scan's hits already in the code its paths match, with the `allows:` line that would accept them
    (shared/measurement/tamper.py, standing). Read from spec's own copy of the code's commit, as the checks are."""
    previous = {req.id: req for doc in store.load_documents() for req in doc.requirements}
    changed = [req for doc in documents for req in doc.requirements if req.id not in previous
               or (previous[req.id].paths, previous[req.id].allows) != (req.paths, req.allows)]
    if not changed or not (is_repo(ws.code, ws.code_git) or is_repo(ws.code)):
        return ()
    code = ws.code_repo()
    head = code.head()
    if head is None:
        return ()
    try:
        return tuple(tamper.standing(PlanStore(ws.role_dir("spec") / "objects.git").fetch(code, head), head, changed))
    except (ExportError, GitError) as exc:
        return (f"note: the code was not scanned for what the tamper scan looks for: {str(exc).splitlines()[0]}",)
