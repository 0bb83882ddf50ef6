"""One pass number everywhere: what plan-loop prints, what `build-loop report` says a turn acted on, fix_plan.json
and `banach status` all count plan passes from 1; the journal row a pass started at keeps a name of its own."""
from __future__ import annotations

import json
import re

from shared.contracts import fix_plan as fix_plan_file
from shared.workspace import Workspace
from tests.helpers.workspaces import agent, cli


def test_plan_report_fix_plan_and_status_agree_on_the_pass(measured: Workspace) -> None:
    root = str(measured.root)
    printed = []
    for _ in range(2):  # the fixture measured once: these are passes 2 and 3
        result = cli("plan-loop", "once", "--workspace", root)
        assert result.returncode == 0, result.stderr
        printed += [int(n) for n in re.findall(r"^plan pass (\d+):", result.stdout, re.M)]
    assert printed == [2, 3]

    turn = cli("build-loop", "once", "--workspace", root, "--agent-command", agent("no_change.py"))
    assert turn.returncode == 0, turn.stderr
    report = cli("build-loop", "report", "1", "--workspace", root)
    assert report.returncode == 0, report.stderr
    assert re.search(r"^iteration 1: item \S+ \(plan pass 3, canon v1\)$", report.stdout, re.M), report.stdout

    plan = json.loads(measured.fix_plan_json.read_text())
    assert plan["pass_number"] == 3
    assert plan["pass_seq"] != 3  # the journal row: a different number, under a different name
    assert "by plan pass 3." in measured.fix_plan_md.read_text()

    info = json.loads(cli("banach", "status", "--json", "--workspace", root).stdout)
    assert info["fix_plan"]["pass"] == 3 and info["fix_plan"]["pass_seq"] == plan["pass_seq"]
    assert info["plan_passes"] == 3
    text = cli("banach", "status", "--workspace", root).stdout
    assert re.search(r"^residual\s+5 \(plan pass 3\)", text, re.M), text


def test_a_fix_plan_written_before_pass_numbers_still_reads_and_is_numbered(measured: Workspace) -> None:
    root = str(measured.root)
    assert cli("plan-loop", "once", "--workspace", root).returncode == 0
    old = json.loads(measured.fix_plan_json.read_text())
    del old["pass_number"], old["plan_agent"]  # as the previous version of plan-loop wrote it
    measured.fix_plan_json.write_text(json.dumps(old))
    plan = fix_plan_file.read(measured.fix_plan_json)
    assert plan is not None and plan.pass_number is None and plan.pass_seq == old["pass_seq"]
    info = json.loads(cli("banach", "status", "--json", "--workspace", root).stdout)
    assert info["fix_plan"]["pass"] == 2  # from plan's journal
