"""A rejected plan-agent answer is said where a person looks (plan's output, `banach status`), and the plan agent's
identity is part of what makes a pass due: a new agent on the same (V, C) is asked, the same one is not asked again."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from plan_loop.agent_oracle import make_agent
from plan_loop.passes import PlanService
from plan_loop.run import due
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import agent, cli

PROSE = "I looked at the code and I think everything is basically fine!"  # what plan_prose.py answers


def passes(ws: Workspace) -> int:
    journal = Journal.reader(ws.journal_path("plan"))
    if journal is None:
        return 0
    with journal:
        return journal.count("pass")


def test_a_rejected_answer_is_printed_and_shown_in_status(measured: Workspace) -> None:
    root = str(measured.root)
    result = cli("plan-loop", "once", "--workspace", root, "--agent-command", agent("plan_prose.py"))
    assert result.returncode == 0, result.stderr
    rejected = [line for line in result.stdout.splitlines() if "PLAN AGENT ANSWER REJECTED" in line]
    assert len(rejected) == 1, result.stdout
    assert "TK-6" in rejected[0] and "not JSON" in rejected[0] and PROSE in rejected[0] and "plan_prose.py" in rejected[0]

    text = cli("banach", "status", "--workspace", root).stdout
    line = next((row for row in text.splitlines() if row.startswith("PLAN AGENT")), "")
    assert "TK-6" in line and "not JSON" in line and PROSE in line, text
    info = json.loads(cli("banach", "status", "--json", "--workspace", root).stdout)
    assert "plan_prose.py" in info["fix_plan"]["plan_agent"]
    assert len(info["fix_plan"]["agent_rejections"]) == 1 and "TK-6" in info["fix_plan"]["agent_rejections"][0]

    again = cli("plan-loop", "once", "--workspace", root, "--agent-command", agent("plan_judge.py"))
    assert "REJECTED" not in again.stdout
    assert not any(row.startswith("PLAN AGENT") for row in cli("banach", "status", "--workspace", root).stdout.splitlines())


def test_a_new_plan_agent_on_the_same_canon_and_code_is_asked(measured: Workspace) -> None:
    prose, judge = agent("plan_prose.py"), agent("plan_judge.py")
    service = PlanService(measured)
    try:
        now = time.monotonic()
        assert due(service, now, None) == ""  # the fixture's pass describes (V, C) without a plan agent
        assert due(service, now, make_agent(measured, prose)).startswith("the plan agent changed")
    finally:
        service.close()

    # the watching loop, started with a plan agent on that same (V, C), asks it at once
    run = subprocess.Popen([sys.executable, "-m", "plan_loop", "run", "--workspace", str(measured.root),
                            "--agent-command", prose], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(lambda: passes(measured) == 2, [measured.role_dir("plan")], 60)
    finally:
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert "[the plan agent changed: now --agent-command" in out and "PLAN AGENT ANSWER REJECTED" in out, out

    service = PlanService(measured)
    try:
        now = time.monotonic()
        assert due(service, now, make_agent(measured, prose)) == ""  # asked already: not again
        assert due(service, now, make_agent(measured, judge)).startswith("the plan agent changed")
        assert due(service, now, None) == "the plan agent was removed"
    finally:
        service.close()


def test_a_preset_s_settings_are_part_of_its_identity(measured: Workspace) -> None:
    config = measured.config_file.read_text().replace("[plan]", '[plan]\nagent = "judge"', 1)
    measured.config_file.write_text(config + f'\n[agents.judge]\npreset = "command"\ncommand = "{agent("plan_judge.py")}"\n')
    first = make_agent(Workspace.open(measured.root), "")
    measured.config_file.write_text(measured.config_file.read_text() + 'model = "another"\n')
    second = make_agent(Workspace.open(measured.root), "")
    assert first is not None and second is not None
    assert "plan agent 'judge'" in first.label
    assert first.identity != second.identity and first.label == second.label
    assert make_agent(Workspace.open(measured.root), "").identity == second.identity  # type: ignore[union-attr]
