"""`banach journal verify`: recompute every role's chain, optionally its receipts, and check each journal
against the heads the other roles' journals recorded of it (its anchors).

A chain alone proves nothing about rows that are gone: a journal deleted, cut short and re-chained, or
replaced by a fresh one still holds as a chain. Its anchors are written by the other roles, which the
journal's own role cannot write, so a journal that lost an anchored row is named here with the row that
vouched for it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shared.journal import Anchor, Journal, is_journal_file
from shared.workspace import ROLES, Role, Workspace


@dataclass(frozen=True)
class _Chain:
    ok: bool
    line: str
    anchors: list[Anchor]


def verify_all(ws: Workspace, *, receipts: bool = False) -> tuple[bool, list[str]]:
    # Every journal's anchors are collected before any journal's rows are looked up: journals only grow, so a
    # head a peer recorded before we looked is in the journal when we look, even while the loops keep writing.
    chains = {role: _chain(ws, role, receipts=receipts) for role in ROLES}
    vouched: dict[Role, list[Anchor]] = {role: [] for role in ROLES}
    for chain in chains.values():
        for anchor in chain.anchors:
            if anchor.role in vouched and anchor.role != anchor.voucher:
                vouched[anchor.role].append(anchor)  # type: ignore[index]
    ok, lines = True, []
    for role in ROLES:
        chain, anchors = chains[role], vouched[role]
        problems = _check_anchors(ws, role, anchors)
        ok = ok and chain.ok and not problems
        if chain.line:
            lines.append(chain.line + ("" if problems or not anchors else _held(anchors)))
        lines.extend(problems)
    if not lines:
        lines.append("no journals yet")
    return ok, lines


def _chain(ws: Workspace, role: Role, *, receipts: bool) -> _Chain:
    path = ws.journal_path(role)
    shown = _shown(ws, path)
    if not path.exists() and not path.is_symlink():
        return _Chain(True, "", [])
    if not is_journal_file(path):
        return _Chain(False, f"{role}: {shown} is not a regular file (a symlink, folder or device); a journal is "
                             "a plain SQLite file written by its role only", [])
    key = None
    if receipts:
        key_path = ws.keys_dir / f"{role}.key"
        if not key_path.exists():
            return _Chain(False, f"{role}: no key at {ws.relative(key_path)}; receipts cannot be checked", [])
        key = key_path.read_bytes()
    try:
        journal = Journal(path, readonly=True)
    except Exception as exc:  # a file that is not SQLite at all
        return _Chain(False, f"{role}: {shown} cannot be opened: {exc}", [])
    with journal:
        verdict = journal.verify(key=key)
        try:
            anchors = journal.anchors(role)
        except Exception:  # unreadable rows are already reported by the chain check
            anchors = []
    if not verdict.ok:
        return _Chain(False, f"{role}: BROKEN at row {verdict.first_bad}: {verdict.reason} ({shown})", anchors)
    return _Chain(True, f"{role}: {verdict.rows} rows, chain holds" + (", receipts verify" if receipts else ""), anchors)


def _check_anchors(ws: Workspace, role: Role, anchors: list[Anchor]) -> list[str]:
    """One line per role whose anchors of this journal do not hold, naming the earliest failing one."""
    if not anchors:
        return []
    path = ws.journal_path(role)
    shown = _shown(ws, path)
    hashes = _hashes(path)
    failing: dict[str, dict[tuple[int, str], Anchor]] = {}
    for anchor in anchors:  # in row order, so each distinct head keeps the first row that recorded it
        if hashes is None or hashes.get(anchor.seq) != anchor.hash:
            failing.setdefault(anchor.voucher, {}).setdefault((anchor.seq, anchor.hash), anchor)
    lines = []
    for voucher, distinct in sorted(failing.items()):
        bad = list(distinct.values())
        first = min(bad, key=lambda a: (a.seq, a.voucher_seq))
        vouch = f"{voucher}'s row {first.voucher_seq} vouches for {role} row {first.seq} (hash {first.hash[:12]})"
        more = f" ({len(bad) - 1} more of {voucher}'s anchors fail too)" if len(bad) > 1 else ""
        if hashes is None:
            lines.append(f"{role}: MISSING: {vouch}, but {shown} is gone or unreadable: the journal was deleted, "
                         f"moved or replaced by something that is not a journal, and its record is lost{more}")
        elif first.seq not in hashes:
            last = max(hashes, default=0)
            lines.append(f"{role}: TRUNCATED: {vouch}, but {shown} ends at row {last}: rows were removed from its "
                         f"end or it was replaced by a shorter chain (or {voucher} recorded a false head){more}")
        else:
            lines.append(f"{role}: REPLACED: {vouch}, but {shown} has hash {hashes[first.seq][:12]} there: the "
                         f"journal was replaced by another chain or rewritten at or before that row (or {voucher} "
                         f"recorded a false head){more}")
    return lines


def _hashes(path: Path) -> dict[int, str] | None:
    if not is_journal_file(path):
        return None
    try:
        with Journal(path, readonly=True) as journal:
            return journal.hashes()
    except Exception:  # not SQLite, no table: nothing anchored can be in it
        return None


def _shown(ws: Workspace, path: Path) -> str:
    """The journal's own name, not where a link in its place points."""
    return f"{ws.relative(path.parent)}/{path.name}"


def _held(anchors: list[Anchor]) -> str:
    vouchers = " and ".join(sorted({a.voucher for a in anchors}))
    return f", anchored by {vouchers} up to row {max(a.seq for a in anchors)}: they hold"
