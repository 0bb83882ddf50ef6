"""fix_plan: a measurement of the residual between canon version V and code commit C, not a to-do list."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared.atomic import write_json, write_text
from shared.errors import WorkspaceError
from shared.journal import Journal

SCHEMA_VERSION = 1


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Evidence(Frozen):
    check: str = Field(description="which check: 'check:N <command>', 'tests <node ids>', or 'agent'")
    exit_code: int | None = None
    timed_out: bool = False
    excerpt: str = Field("", description="the tail of the check's output")
    fingerprint: str = Field(description="stable hash of the failure; constant for a time-out")


HELD_BACK_EVIDENCE = "held-back tests"  # the check an item's evidence names for a requirement's held-back tests
SEALED_EVIDENCE = "sealed cases"  # ... and for its sealed cases: neither is build's to run


class Item(Frozen):
    id: str = Field(description="stable: the same gap gives the same id across passes")
    kind: Literal["implement", "fix", "demolish"]
    priority: int
    requirements: tuple[str, ...]
    title: str
    evidence: tuple[Evidence, ...]
    scope: tuple[str, ...] = Field(description="the write scope: paths granted by the requirements")
    depends_on: tuple[str, ...] = Field((), description="ids of open items this one waits for")
    area: str = ""

    @property
    def held_back(self) -> bool:
        """Some of its failing checks are held-back tests or sealed cases, which only plan runs: build's sensors cannot
        see them."""
        return any(evidence.check in (HELD_BACK_EVIDENCE, SEALED_EVIDENCE) for evidence in self.evidence)


class FixPlan(Frozen):
    schema_version: int = SCHEMA_VERSION
    canon_version: int
    canon_commit: str
    code_commit: str
    created: str
    pass_seq: int = Field(description="the plan journal row that started the pass that wrote it: the id build and "
                                      "certificates refer to, not a count")
    pass_number: int | None = Field(None, description="which plan pass wrote it, counted from 1 as plan-loop prints "
                                                      "it; None in files written before it was recorded")
    residual: int
    items: tuple[Item, ...]
    unmeasured: tuple[str, ...] = Field((), description="requirements no check or plan agent measures")
    agent_rejections: tuple[str, ...] = Field((), description="plan-agent answers this pass rejected, and why")
    plan_agent: str = Field("", description="the plan agent this pass asked (its command or preset), or ''")

    def open_item(self, item_id: str) -> Item | None:
        return next((item for item in self.items if item.id == item_id), None)


def pass_numbers(plan_journal: Journal) -> dict[int, int]:
    """Each plan pass's number (1 for the first), by the journal row that started it (`pass_seq`): how fix_plans
    written before `pass_number` existed, and build's records of which fix_plan a turn acted on, are numbered."""
    starts = (row.data.get("started_seq") for row in plan_journal.rows("pass"))
    return {int(seq): number for number, seq in enumerate(starts, 1) if seq is not None}


def pass_number(plan: FixPlan, plan_journal: Journal | None) -> int | None:
    """The number people see for the pass that wrote this fix_plan."""
    if plan.pass_number is not None:
        return plan.pass_number
    return pass_numbers(plan_journal).get(plan.pass_seq) if plan_journal is not None else None


def render_markdown(plan: FixPlan) -> str:
    lines = [
        "# fix_plan",
        "",
        f"A measurement of canon v{plan.canon_version} against code {plan.code_commit[:12]}, taken {plan.created}"
        + (f" by plan pass {plan.pass_number}." if plan.pass_number is not None else "."),
        f"Residual: {plan.residual} open item(s). Regenerated from scratch by every plan pass; edits here are undone.",
        "",
    ]
    for item in plan.items:
        lines.append(f"## {item.id} ({item.kind}, priority {item.priority}): {item.title}")
        lines.append(f"- requirements: {', '.join(item.requirements)}")
        lines.append(f"- scope: {', '.join(item.scope) or '(none granted)'}")
        if item.depends_on:
            lines.append(f"- waits for: {', '.join(item.depends_on)}")
        for evidence in item.evidence:
            status = "timed out" if evidence.timed_out else f"exit {evidence.exit_code}"
            lines.append(f"- failing: `{evidence.check}` ({status})")
            if evidence.excerpt.strip():
                lines.append("")
                lines.extend("      " + row for row in evidence.excerpt.strip().splitlines())  # bounded where measured
                lines.append("")
        lines.append("")
    for rejection in plan.agent_rejections:
        lines.append(f"Plan agent rejected: {rejection}")
    if plan.unmeasured:
        lines.append(f"Unmeasured (no check, no plan agent: the metric is blind here): {', '.join(plan.unmeasured)}")
    return "\n".join(lines).rstrip() + "\n"


def write(plan: FixPlan, json_path: Path, md_path: Path) -> None:
    write_text(md_path, render_markdown(plan))
    write_json(json_path, plan.model_dump(mode="json"))  # last: the JSON is what readers trust


def read(path: Path) -> FixPlan | None:
    """The current fix_plan, or None when no pass has written one. A corrupted file is an error that says what to do."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkspaceError(f"{path}: cannot read fix_plan ({exc}); run 'plan-loop once' to regenerate it") from None
    try:
        return FixPlan.model_validate(json.loads(raw))
    except (json.JSONDecodeError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise WorkspaceError(
            f"{path}: fix_plan is not valid ({first}). It is only a measurement: "
            "run 'plan-loop once' to regenerate it from canon and code."
        ) from None
