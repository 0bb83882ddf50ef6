"""`spec-loop check`: canon as it stands must parse, reconcile, and match its last committed version; every
file its checks name must be in the code's current commit (or be one its requirement may create)."""
from __future__ import annotations

from canon.parser import CanonSyntaxError
from canon.reconcile import reconcile
from canon.store import CanonStore
from shared.errors import CanonError
from shared.git import is_repo
from shared.workspace import Workspace


def check_canon(ws: Workspace) -> tuple[list[str], int]:
    store = CanonStore(ws.canon)
    problems: list[str] = []
    dirty = store.dirty()
    if dirty:
        problems.append(f"{ws.relative(ws.canon)}: files changed outside spec-loop: {', '.join(dirty)}; "
                        "canon is only changed through 'spec-loop edit' or the inbox")
    try:
        canon = store.load()
    except CanonSyntaxError as exc:
        return problems + [str(exc)], store.version()
    except CanonError as exc:
        return problems + [str(exc)], 0
    code = ws.code_repo() if is_repo(ws.code, ws.code_git) or is_repo(ws.code) else None
    code_files = code.files_at("HEAD") if code is not None and code.head() else None
    found = reconcile(list(canon.documents), previous={}, replaced={}, test_sources=store.test_sources(),
                      code_files=code_files or [], canon_files=list(store.files()) if code_files is not None else None)
    return problems + [str(p) for p in found], canon.version
