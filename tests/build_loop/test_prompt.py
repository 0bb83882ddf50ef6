"""The prompt presents the item's task under the one task heading, and a satisfied dependency only as context
marked as done: never as a heading of its own, which a simple agent took for its task."""
from __future__ import annotations

import re

from plan_loop.passes import PlanService
from shared.contracts import fix_plan as fix_plan_file
from shared.workspace import Workspace
from tests.helpers.workspaces import agent, cli, git


def markdown_headings(lines: list[str]) -> list[str]:
    """Heading lines outside fenced blocks (a check's output may hold '#' lines of its own)."""
    found, fenced = [], False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        elif line.startswith("#") and not fenced:
            found.append(line)
    return found


def test_a_satisfied_dependency_is_context_marked_done_not_a_task(measured: Workspace) -> None:
    from build_loop.sim_agent import reference_root

    for rid in ("TK-1", "TK-2", "TK-3", "TK-4"):  # everything but TK-5, which depends on TK-1 and TK-2
        source = reference_root() / rid / "right"
        for path in source.rglob("*.py"):
            (measured.code / path.relative_to(source)).write_text(path.read_text())
    git(measured.code, "add", "-A")
    git(measured.code, "commit", "-qm", "TK-1 to TK-4")
    service = PlanService(measured)
    try:
        service.run_pass()
    finally:
        service.close()
    plan = fix_plan_file.read(measured.fix_plan_json)
    assert plan is not None and [item.requirements for item in plan.items] == [("TK-5",)]

    result = cli("build-loop", "once", "--workspace", str(measured.root), "--agent-command", agent("no_change.py"))
    assert result.returncode == 0, result.stderr
    prompt = (measured.role_dir("build") / "iterations" / "1" / "prompt.md").read_text()
    lines = prompt.splitlines()
    headings = markdown_headings(lines)

    task = [line for line in headings if line.startswith("## Your task")]
    assert task == ["## Your task: a command line for slug and count"], headings
    assert not [line for line in headings if re.search(r"TK-[12]\b", line)], headings  # no dependency is a heading
    assert headings.index(task[0]) == 0  # the task comes first

    done = lines.index(next(line for line in lines if line.startswith("Already done, for context:")))
    context = headings.index("## Context")
    assert lines.index("## Context") < done and "not your task" in lines[done]
    assert [line.split(":")[0] for line in lines[done + 1:] if line.startswith("- TK-")] == ["- TK-1", "- TK-2"]
    assert "Requirement TK-5 (canon v1): a command line for slug and count" in lines
    assert lines.index("Requirement TK-5 (canon v1): a command line for slug and count") < lines.index(headings[1])
    assert context == len(headings) - 1
