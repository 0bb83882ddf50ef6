"""`banach journal verify`: recompute every role's chain, and optionally its receipts."""
from __future__ import annotations

from shared.journal import Journal
from shared.workspace import ROLES, Workspace


def verify_all(ws: Workspace, *, receipts: bool = False) -> tuple[bool, list[str]]:
    ok, lines = True, []
    for role in ROLES:
        path = ws.journal_path(role)
        if not path.exists():
            continue
        key = None
        if receipts:
            key_path = ws.keys_dir / f"{role}.key"
            if not key_path.exists():
                ok = False
                lines.append(f"{role}: no key at {ws.relative(key_path)}; receipts cannot be checked")
                continue
            key = key_path.read_bytes()
        try:
            journal = Journal(path, readonly=True)
        except Exception as exc:  # a file that is not SQLite at all
            ok = False
            lines.append(f"{role}: {ws.relative(path)} cannot be opened: {exc}")
            continue
        with journal:
            verdict = journal.verify(key=key)
        if verdict.ok:
            lines.append(f"{role}: {verdict.rows} rows, chain holds" + (", receipts verify" if receipts else ""))
        else:
            ok = False
            lines.append(f"{role}: BROKEN at row {verdict.first_bad}: {verdict.reason} ({ws.relative(path)})")
    if not lines:
        lines.append("no journals yet")
    return ok, lines
