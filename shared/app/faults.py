"""What the demo teaches: each fault the SIMULATED agent injected (read back from what it printed in its turn; it says
what it did, since it is a script), and what the governor did about it (from build's journal, which decides). Only
the demo reads this: a real agent's words are never read as fact."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from shared.contracts import cause
from shared.contracts.blocks import requirement_of
from shared.journal import Journal
from shared.workspace import Workspace

SAID = re.compile(r"^item (?P<item>\S+), iteration (?P<n>\d+): variant=(?P<variant>\w+)(?P<extra>[^;]*); wrote (?P<wrote>.*)$",
                  re.MULTILINE)
OUT_OF_SCOPE = ("README.md", "NOTES-from-agent.md")  # what the simulated agent writes outside every item's scope
DID = {"keep": "kept", "rollback": "ROLLED BACK", "stall": "stall", "agent_failed": "agent failed", "interrupted":
       "interrupted"}


@dataclass(frozen=True)
class Fault:
    n: int
    requirement: str
    injected: str  # the fault, in words
    decision: str
    outcome: str  # what the governor did, and why

    def line(self) -> str:
        return f"iteration {self.n:>2} {self.requirement}: {self.injected} -> {self.outcome}"


def _injected(variant: str, wrote: list[str], extra: str) -> str:
    parts = {"wrong": ["a wrong edit (plausible code that fails its tests)"], "none": ["no edit at all"]}.get(variant, [])
    outside = [path for path in wrote if path in OUT_OF_SCOPE]
    if outside:
        parts.append(f"an edit outside its scope ({', '.join(outside)})" + (" beside the right change"
                                                                             if variant == "right" else ""))
    if extra.strip():
        parts.append(extra.strip().lstrip("+"))
    return ", and ".join(parts)


def _outcome(record: dict[str, Any]) -> str:
    decision = str(record.get("decision"))
    said = f"{DID.get(decision, decision)}: {record.get('reason', '')}"
    why = cause.from_output(str(record.get("excerpt") or ""))
    if decision == "rollback" and why:
        said += f" ({why})"
    if record.get("reverted"):
        said += f"; the fence reverted {', '.join(record['reverted'])}"
    return said


def injected_faults(ws: Workspace) -> list[Fault]:
    """Every turn in which the simulated agent injected a fault, in order, with the governor's decision."""
    journal = Journal.reader(ws.journal_path("build"))
    if journal is None:
        return []
    with journal:
        ended = {int(row.data["n"]): row.data for row in journal.rows("iteration.ended") if row.data.get("n") is not None}
    faults = []
    for n, record in sorted(ended.items()):
        if record.get("decision") == "already_green":
            continue
        try:
            output = (ws.role_dir("build") / "iterations" / str(n) / "output.txt").read_text(errors="replace")
        except OSError:
            continue
        said = SAID.search(output)
        if said is None:
            continue
        wrote = [path.strip() for path in said["wrote"].split(",") if path.strip() and path.strip() != "nothing"]
        injected = _injected(said["variant"], wrote, said["extra"])
        if injected:
            faults.append(Fault(n, requirement_of(str(record.get("item", ""))), injected, str(record.get("decision")),
                                _outcome(record)))
    return faults


def glossary(canon_version: int, code_commit: str, unmeasured: list[str]) -> list[str]:
    """The words of the summary, for a first reader."""
    return [
        f"canon v{canon_version} x code {code_commit[:12]}: the pair plan measured, the spec's version and the code's "
        "commit; a certificate holds for exactly that pair, and a new version or commit needs a new pass",
        "residual: the open fix_plan items of a plan pass, what is left between canon and the code",
        "q: how much of the residual is left after each plan pass (the fitted slope of log residual; below 1 converges, "
        "1 means no progress); n/a until there are three passes",
        "unmeasured: requirements no test or check measures" + (f" (here {', '.join(unmeasured)})" if unmeasured else "")
        + ": a certificate says nothing about them",
    ]
