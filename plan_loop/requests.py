"""What build asks of plan, read from build's journal (read-only): demolition of a stalled area.

Build journals 'demolish.requested' when the monitor reports a stall; the request stands until build
keeps a demolish item for that area."""
from __future__ import annotations

from shared.journal import Journal
from shared.workspace import Workspace


def stalled_areas(ws: Workspace) -> frozenset[str]:
    journal = Journal.reader(ws.journal_path("build"))
    if journal is None:
        return frozenset()
    areas: dict[str, int] = {}
    with journal:
        for row in journal.rows("demolish.requested"):
            areas[row.data["area"]] = row.seq
        for row in journal.rows("iteration.ended"):
            if row.data.get("decision") == "keep" and row.data.get("kind") == "demolish":
                area = row.data.get("area", "")
                if area in areas and row.seq > areas[area]:
                    del areas[area]
    return frozenset(areas)
