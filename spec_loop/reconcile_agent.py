"""The optional reconcile agent: an agent command that may flag semantic contradictions in a proposed canon.

It gets the proposed requirements on stdin and must answer with JSON matching RECONCILE_SCHEMA. A
flagged contradiction refuses the draft like any other reconcile problem; an answer that does not
validate (prose, broken JSON, unknown ids, a failed or timed-out run) is ignored, and the reason is
journaled and shown: the deterministic checks stand either way. It runs sandboxed, writing nothing
but a scratch folder.
"""
from __future__ import annotations

import json
import os
import shlex

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from canon.model import Document
from shared.isolation.policy import sandbox_argv
from shared.process import Request, run
from shared.workspace import Workspace


class Contradiction(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    requirements: tuple[str, ...] = Field(min_length=2, description="the ids that cannot all hold")
    reason: str = Field(min_length=1, max_length=2000)


class ReconcileAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: int = Field(1, ge=1, le=1)
    contradictions: tuple[Contradiction, ...] = ()


RECONCILE_SCHEMA = ReconcileAnswer.model_json_schema()

PROMPT = """You review a proposed software specification for requirements that contradict each other
(no code could satisfy all of them). Answer with ONLY a JSON object matching this schema:
{schema}

{requirements}
"""


def command_for(ws: Workspace, override: str = "") -> str:
    if override:
        return override
    name = ws.config.spec.reconcile_agent
    return ws.config.agents[name].command if name else ""


def ask(ws: Workspace, command: str, documents: list[Document]) -> tuple[list[str], str]:
    """(problems, ignored_reason). Problems name the requirements and their file:line."""
    sources = {req.id: req for doc in documents for req in doc.requirements}
    text = "\n\n".join(f"## {r.id}: {r.title}\npaths: {', '.join(r.paths)}\n{r.text}" for r in sources.values())
    scratch = ws.role_dir("spec") / "tmp" / "reconcile-agent"
    scratch.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(scratch), "TMPDIR": str(scratch)}
    outcome = run(Request(sandbox_argv(ws, tuple(shlex.split(command)), [scratch]), cwd=scratch, env=env,
                          stdin=PROMPT.format(schema=json.dumps(RECONCILE_SCHEMA), requirements=text), timeout=300))
    if not outcome.ok:
        return [], f"the reconcile agent exited {outcome.returncode}{' (timed out)' if outcome.timed_out else ''}"
    try:
        answer = ReconcileAnswer.model_validate(json.loads(outcome.stdout.strip()))
    except json.JSONDecodeError as exc:
        return [], f"the reconcile agent's answer is not JSON ({exc.msg} at line {exc.lineno})"
    except ValidationError as exc:
        first = exc.errors()[0]
        return [], f"the reconcile agent's answer does not match the schema: {'.'.join(map(str, first['loc']))}: {first['msg']}"
    problems = []
    for item in answer.contradictions:
        unknown = [rid for rid in item.requirements if rid not in sources]
        if unknown:
            return [], f"the reconcile agent names requirements that do not exist: {', '.join(unknown)}"
        first_req = sources[item.requirements[0]]
        others = ", ".join(f"{rid} ({sources[rid].source})" for rid in item.requirements[1:])
        problems.append(f"{first_req.source}: {first_req.id}: the reconcile agent finds it contradicts {others}: {item.reason}")
    return problems, ""


