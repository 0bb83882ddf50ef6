"""`banach journal show`: a role's journal (or the dashboard's own: who did what from it) as lines a person reads (or
JSON), filtered, and followed as it grows."""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from shared.journal import Journal, Row
from shared.workspace import Role, Workspace

DASHBOARD = "dashboard"  # `banach serve`'s own journal: each action a person took from the page, with who asked

DATA_WIDTH = 160  # characters of a row's data on its line; --json shows all of it


def _wanted(row: Row, kinds: tuple[str, ...]) -> bool:
    return not kinds or any(row.kind == kind or row.kind.startswith(kind + ".") for kind in kinds)


def journal_file(ws: Workspace, name: str) -> Path:
    """A role's journal, or the dashboard's (state/serve/journal.db)."""
    return ws.state / "serve" / "journal.db" if name == DASHBOARD else ws.journal_path(name)  # type: ignore[arg-type]


def action_line(data: dict[str, object]) -> str:
    """A dashboard action as a person reads it: what, on what, what came of it, and from where."""
    by: dict[str, object] = data["by"] if isinstance(data.get("by"), dict) else {}  # type: ignore[assignment]
    said = next((line.strip() for line in str(data.get("message") or "").splitlines() if line.strip()), "")
    target = f" {data['target']}" if data.get("target") else ""
    return (f"{data.get('action')}{target}: {'done' if data.get('ok') else 'REFUSED'}"
            f" (from {by.get('remote') or 'an unknown address'}, via the dashboard)" + (f": {said}" if said else ""))


def describe(row: Row, as_json: bool) -> str:
    if as_json:
        return json.dumps({"seq": row.seq, "ts": row.ts, "kind": row.kind, "data": row.data}, sort_keys=True)
    data = action_line(row.data) if row.kind == "dashboard.action" else json.dumps(row.data, sort_keys=True,
                                                                                    ensure_ascii=False)
    shown = data if len(data) <= DATA_WIDTH else data[:DATA_WIDTH - 3] + "..."
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.ts))
    return f"{row.seq:>6}  {stamp}  {row.kind:<22} {shown}"


def show(ws: Workspace, role: Role | str, *, kinds: tuple[str, ...], last: int, since: int, as_json: bool,
         follow: bool, echo: Callable[[str], None], poll: float = 0.5) -> int:
    """Print the rows; with follow, keep printing new ones until interrupted. Returns an exit status."""
    for line in _lines(ws, role, kinds, last, since, as_json, follow, poll):
        echo(line)
    return 0


def _lines(ws: Workspace, role: Role | str, kinds: tuple[str, ...], last: int, since: int, as_json: bool, follow: bool,
           poll: float) -> Iterator[str]:
    journal = Journal.reader(journal_file(ws, role))
    while journal is None:  # nothing written yet
        if not follow:
            return
        time.sleep(poll)
        journal = Journal.reader(journal_file(ws, role))
    with journal:
        rows = journal.rows(since=since)
        shown = [row for row in rows if _wanted(row, kinds)]
        for row in shown[-last:] if last else shown:
            yield describe(row, as_json)
        seen = rows[-1].seq if rows else since
        while follow:
            time.sleep(poll)
            for row in journal.rows(since=seen):
                seen = row.seq
                if _wanted(row, kinds):
                    yield describe(row, as_json)
