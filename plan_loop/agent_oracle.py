"""The inferential oracle (optional): a plan agent judges requirements that have no check.

One prompt per canon area, each with only that area's unmeasured requirements. The answer must be
JSON that validates against PLAN_AGENT_SCHEMA; anything else is rejected with the reason, journaled
and shown, and the computational items stand. The agent runs sandboxed: it can write nothing but
its scratch folder.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from canon.model import Canon
from plan_loop.items import item_id
from shared.checks.snapshot import Snapshot
from shared.contracts.fix_plan import Evidence, Item
from shared.isolation.policy import sandbox_argv
from shared.journal import canonical
from shared.process import Request, run
from shared.workspace import Workspace


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    requirement: str = Field(description="a requirement id from the prompt")
    holds: bool = Field(description="true if the code satisfies the requirement")
    evidence: str = Field("", max_length=4000, description="why, citing files")


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: Literal[1] = 1
    verdicts: tuple[Verdict, ...]


PLAN_AGENT_SCHEMA = Answer.model_json_schema()

PROMPT = """You are the plan agent of a Banach harness: a read-only judge. You cannot change anything.
Judge whether the code in the current directory satisfies each requirement below.
Answer with ONLY a JSON object matching this schema, no prose:
{schema}

Area: {area}
{requirements}
"""

def parse_answer(text: str, asked: set[str]) -> Answer:
    """Strictly: the whole output (or its last fenced json block) must validate; raises ValueError with the reason."""
    candidate = text.strip()
    fenced = re.findall(r"```(?:json)?\s*\n(.*?)```", candidate, re.DOTALL)
    if fenced:
        candidate = fenced[-1].strip()
    try:
        data = json.loads(candidate)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    try:
        answer = Answer.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"does not match the schema: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    unknown = sorted({v.requirement for v in answer.verdicts} - asked)
    if unknown:
        raise ValueError(f"judges requirements it was not asked about: {', '.join(unknown)}")
    return answer


FIRST_LINE_CHARS = 200


def _first_line(stdout: str, stderr: str) -> str:
    """What a person needs to recognise the answer: its first non-blank line (or stderr's, when it said nothing)."""
    for text, where in ((stdout, ""), (stderr, "on stderr: ")):
        line = next((row.strip() for row in text.splitlines() if row.strip()), "")
        if line:
            return where + (line if len(line) <= FIRST_LINE_CHARS else line[:FIRST_LINE_CHARS] + "...")
    return "(it printed nothing)"


@dataclass(frozen=True, eq=False)
class PlanAgent:
    """The plan agent of this run: how to ask it, what people call it, and its identity, which keys plan's passes so
    that a new agent (another command, preset or setting) is asked even when canon and code are unchanged."""

    ws: Workspace
    argv: tuple[str, ...]
    label: str
    identity: str

    def __call__(self, canon: Canon, snap: Snapshot, unmeasured: list[str]) -> tuple[list[Item], list[str], list[str]]:
        """Items for the requirements it found not to hold, rejections (one line each), and the requirements judged."""
        by_area: dict[str, list[str]] = defaultdict(list)
        for rid in unmeasured:
            by_area[canon.requirements[rid].area].append(rid)
        items: list[Item] = []
        rejections: list[str] = []
        judged: list[str] = []
        for area, rids in sorted(by_area.items()):
            text = "\n".join(f"- {rid}: {canon.requirements[rid].title}\n  {canon.requirements[rid].text}" for rid in rids)
            prompt = PROMPT.format(schema=json.dumps(PLAN_AGENT_SCHEMA), area=area, requirements=text)
            env = {"PATH": os.environ.get("PATH", ""), "HOME": str(snap.scratch), "TMPDIR": str(snap.scratch),
                   "BANACH_PLAN_AREA": area}
            outcome = run(Request(sandbox_argv(self.ws, self.argv, [snap.scratch],
                                                  hidden=[snap.held_back] if snap.held_back else None), cwd=snap.code, env=env,
                                  stdin=prompt, timeout=self.ws.config.plan.agent_timeout))
            try:
                if not outcome.ok:
                    raise ValueError(f"exited {outcome.returncode}{' (timed out)' if outcome.timed_out else ''}")
                answer = parse_answer(outcome.stdout, set(rids))
            except ValueError as exc:
                rejections.append(f"{', '.join(rids)} (area '{area}'): {exc}; the answer began: "
                                  f"{_first_line(outcome.stdout, outcome.stderr)}")
                continue
            for verdict in answer.verdicts:
                judged.append(verdict.requirement)
                if verdict.holds:
                    continue
                req = canon.requirements[verdict.requirement]
                items.append(Item(
                    id=item_id(req.id, ["agent"]), kind="fix", priority=req.priority, requirements=(req.id,),
                    title=req.title, scope=req.paths, area=req.area,
                    evidence=(Evidence(check="agent", excerpt=verdict.evidence[-2000:], fingerprint="agent"),),
                ))
        return items, rejections, judged


def make_agent(ws: Workspace, agent_command: str) -> PlanAgent | None:
    """--agent-command, else the preset named by plan.agent, else None (requirements without checks stay unmeasured)."""
    name = "" if agent_command else ws.config.plan.agent
    preset = ws.config.agents[name] if name else None
    command = agent_command or (preset.command if preset is not None else "")
    if not command:
        return None
    label = f"--agent-command {command!r}" if agent_command else f"plan agent '{name}' ({command!r})"
    who = {"command": command, "preset": name, "settings": preset.model_dump(mode="json") if preset else None,
           "timeout": ws.config.plan.agent_timeout}
    identity = hashlib.sha256(canonical(who).encode()).hexdigest()[:16]
    return PlanAgent(ws, tuple(shlex.split(command)), label, identity)
