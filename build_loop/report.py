"""`build-loop report`: replay why an iteration was kept or rolled back, and the exact text it saw."""
from __future__ import annotations

import json

from shared.errors import BanachError
from shared.journal import Journal
from shared.workspace import Workspace


def latest_iteration(ws: Workspace) -> int:
    journal = Journal.reader(ws.journal_path("build"))
    if journal is None:
        raise BanachError("build-loop has not run any iteration yet")
    with journal:
        row = journal.last("iteration.started")
    if row is None:
        raise BanachError("build-loop has not run any iteration yet")
    return int(row.data["n"])


def iteration_text(ws: Workspace, n: int, what: str) -> str:
    folder = ws.role_dir("build") / "iterations" / str(n)
    name = {"prompt": "prompt.md", "output": "output.txt"}[what]
    path = folder / name
    if not path.exists():
        raise BanachError(f"iteration {n} has no {what} on record ({ws.relative(path)}); "
                          "iterations that found their item already green run no agent")
    return path.read_text(encoding="utf-8", errors="replace")


def summary(ws: Workspace, n: int) -> str:
    journal = Journal.reader(ws.journal_path("build"))
    if journal is None:
        raise BanachError("build-loop has not run any iteration yet")
    with journal:
        rows = [row for row in journal.rows() if row.data.get("n") == n]
    if not rows:
        raise BanachError(f"no iteration {n} in the build journal")
    lines = []
    for row in rows:
        data = row.data
        if row.kind == "iteration.started":
            lines.append(f"iteration {n}: item {data['item']} (plan pass {data.get('plan_pass')}, canon v{data.get('canon_version')})")
            lines.append(f"  checkpoint {data['checkpoint'][:12]}, agent: {data.get('agent')}")
            if data.get("failing_before"):
                lines.append(f"  failing at the checkpoint: {', '.join(data['failing_before'])}")
        elif row.kind == "iteration.ended":
            lines.append(f"  decision: {data['decision']}: {data.get('reason', '')}")
            if data.get("capped"):
                lines.append(f"  capped: {data['capped']}")
            for key in ("guard_violations", "hostile", "reverted", "ignored_removed", "regressions", "failing_after",
                        "changed"):
                if data.get(key):
                    lines.append(f"  {key.replace('_', ' ')}: {', '.join(map(str, data[key]))}")
            if data.get("commit"):
                lines.append(f"  commit: {data['commit']}")
            if data.get("claimed_success"):
                lines.append("  the agent claimed success (not believed; sensors decide)")
        else:
            lines.append(f"  {row.kind}: {json.dumps(data, sort_keys=True)}")
    return "\n".join(lines)
