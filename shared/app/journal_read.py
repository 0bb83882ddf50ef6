"""`banach journal show`: a role's journal as lines a person reads (or JSON), filtered, and followed as it grows."""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

from shared.journal import Journal, Row
from shared.workspace import Role, Workspace

DATA_WIDTH = 160  # characters of a row's data on its line; --json shows all of it


def _wanted(row: Row, kinds: tuple[str, ...]) -> bool:
    return not kinds or any(row.kind == kind or row.kind.startswith(kind + ".") for kind in kinds)


def describe(row: Row, as_json: bool) -> str:
    if as_json:
        return json.dumps({"seq": row.seq, "ts": row.ts, "kind": row.kind, "data": row.data}, sort_keys=True)
    data = json.dumps(row.data, sort_keys=True, ensure_ascii=False)
    shown = data if len(data) <= DATA_WIDTH else data[:DATA_WIDTH - 3] + "..."
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.ts))
    return f"{row.seq:>6}  {stamp}  {row.kind:<22} {shown}"


def show(ws: Workspace, role: Role, *, kinds: tuple[str, ...], last: int, since: int, as_json: bool,
         follow: bool, echo: Callable[[str], None], poll: float = 0.5) -> int:
    """Print the rows; with follow, keep printing new ones until interrupted. Returns an exit status."""
    for line in _lines(ws, role, kinds, last, since, as_json, follow, poll):
        echo(line)
    return 0


def _lines(ws: Workspace, role: Role, kinds: tuple[str, ...], last: int, since: int, as_json: bool, follow: bool,
           poll: float) -> Iterator[str]:
    journal = Journal.reader(ws.journal_path(role))
    while journal is None:  # nothing written yet
        if not follow:
            return
        time.sleep(poll)
        journal = Journal.reader(ws.journal_path(role))
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
