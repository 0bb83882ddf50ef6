"""What was done, and by whom, for the dashboard's pages: the changes build kept (which agent, when, on which
requirement), and the actions people took from the dashboard (its own journal, state/serve/journal.db). Read-only,
like query.py; kept apart from it so that each stays one job."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from shared.app.journal_read import action_line, journal_file
from shared.contracts.blocks import UNBLOCKED, requirement_of
from shared.journal import Journal
from shared.workspace import Workspace

KEPT_SHOWN = 200
ACTIONS_SHOWN = 200


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def kept(ws: Workspace) -> list[dict[str, Any]]:
    """Every change build kept, newest first: the turn, its item and requirement, the commit, the agent that wrote it
    (the rung or command the turn ran) and when; and each unblock a person gave, as the record shows it."""
    journal = Journal.reader(ws.journal_path("build"))
    if journal is None:
        return []
    with journal:
        started = {row.data.get("n"): row.data for row in journal.rows("iteration.started")}
        rows = [row for row in journal.rows("iteration.ended") if row.data.get("decision") == "keep"]
        unblocks = journal.rows(UNBLOCKED)
    shown = [{"n": row.data.get("n"), "item": row.data.get("item", ""),
              "requirement": requirement_of(str(row.data.get("item", ""))), "commit": row.data.get("commit") or "",
              "by": row.data.get("agent") or started.get(row.data.get("n"), {}).get("agent") or "the agent",
              "when": _when(row.ts), "ts": row.ts, "canon_version": row.data.get("canon_version"),
              "what": row.data.get("reason", "")} for row in rows]
    shown += [{"n": None, "item": row.data.get("item", ""), "requirement": requirement_of(str(row.data.get("item", ""))),
               "commit": "", "by": row.data.get("by") or "a person", "when": _when(row.ts), "ts": row.ts,
               "canon_version": row.data.get("canon_version"), "what": "unblocked: a fresh attempt budget"}
              for row in unblocks]
    return sorted(shown, key=lambda entry: entry["ts"], reverse=True)[:KEPT_SHOWN]


def actions(path: Path) -> list[dict[str, Any]]:
    """The dashboard's own journal, newest first: what a person did from the page, from where, what came of it."""
    journal = Journal.reader(path)
    if journal is None:
        return []
    with journal:
        rows = journal.rows("dashboard.action")
    return [{"seq": row.seq, "when": _when(row.ts), "action": row.data.get("action"), "target": row.data.get("target"),
             "ok": bool(row.data.get("ok")), "from": (row.data.get("by") or {}).get("remote") or "",
             "line": action_line(row.data), "message": str(row.data.get("message") or "")}
            for row in reversed(rows[-ACTIONS_SHOWN:])]


def serve_journal(ws: Workspace) -> Path:
    return journal_file(ws, "dashboard")
