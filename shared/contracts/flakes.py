"""Which checks build found flaky: build writes them with each turn's record (`iteration.ended`, key `flaky`:
check -> what it read, after the turn and on each rerun of the same tree); plan, status and the plot read them.
A flaky conformance test is a canon problem: it makes every verdict on its requirement weaker."""
from __future__ import annotations

from pathlib import Path

from shared.journal import Journal


def flaky_checks(build_journal: Path, canon_version: int) -> list[str]:
    """The checks build saw flip on one tree under this canon version, oldest first."""
    journal = Journal.reader(build_journal)
    if journal is None:
        return []
    with journal:
        found: dict[str, None] = {}
        for row in journal.rows("iteration.ended"):
            if row.data.get("canon_version") == canon_version:
                found.update(dict.fromkeys(row.data.get("flaky") or {}))
    return list(found)
