"""banach run --until-certified: spec, plan and build in the foreground as real processes, until plan certifies
(exit 0), or a budget runs out or nothing can progress (exit 1, one line saying which and what to do), or a
signal stops it (the running step stopped cleanly, exit 128 + signal)."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from shared.journal import Journal
from shared.workspace import Workspace
from tests.build_loop.test_reactions import CONTRADICTORY, stall_canon
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import OPEN, cli, custom, git

FAKE_CLAUDE = """#!{python}
import json, sys
sys.stdin.read()
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "done", "total_cost_usd": 0.6}}))
"""


def run(ws: Workspace, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return cli("banach", "run", "--until-certified", "--workspace", str(ws.root), *args, timeout=timeout)


def last_line(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout.strip().splitlines()[-1]


def test_without_a_stop_condition_it_says_what_to_give() -> None:
    result = cli("banach", "run")
    assert result.returncode == 2
    assert "banach run needs its stop condition named: --until-certified" in result.stderr
    assert "use 'banach up'" in result.stderr


def test_it_runs_the_loops_until_plan_certifies(tmp_path: Path) -> None:
    ws = custom(tmp_path, stall_canon(2), "partial.py")
    result = run(ws, "--max-turns", "2")  # spent by the last turn it needs: plan's pass after it still certifies
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "spec: inbox is empty; canon stays at v1"
    assert lines[1].startswith("plan pass 1: canon v1 x code ") and "residual 2" in lines[1]
    assert "; open: ST-1." in lines[1] and ", ST-2." in lines[1]
    builds = [line for line in lines if line.startswith("build iteration ")]
    assert len(builds) == 2 and all(": keep: failing 1 -> 0 [commit " in line for line in builds), lines
    assert builds[1].endswith(", turn 2 of 2]")
    head = git(ws.code, "rev-parse", "HEAD")
    assert lines[-1] == (f"run: CERTIFIED: plan pass 3 found nothing open at canon v1 x code {head[:12]} (2 of 2 "
                         f"requirements measured), after 2 build turn(s); deliver it with: banach deliver -w {ws.root}")
    assert lines.count("spec: inbox is empty; canon stays at v1") == 1  # said once, not at every round
    banners = result.stderr.splitlines()
    assert sum(line.startswith("build-loop: WARNING: isolation backend 'none'") for line in banners) == 1


def test_a_turn_budget_stops_it_and_says_which_and_what_is_left(tmp_path: Path) -> None:
    ws = custom(tmp_path, stall_canon(2), "no_change.py")
    result = run(ws, "--max-turns", "1", "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    answer = json.loads(result.stdout)
    assert answer["certified"] is False and answer["exit_code"] == 1 and answer["turns"] == 1
    # the turns end with the budget; plan still measures what they left (a certificate there would still count)
    assert answer["reason"].startswith("turn budget spent: 1 of 1 build turns (--max-turns); residual 2 at plan pass 2 (ST-")
    assert answer["reason"].endswith("; raise --max-turns and run again (the workspace keeps its state)")
    assert "build iteration 1 (ST-1." in result.stderr  # the steps go to stderr under --json
    assert f"run: NOT CERTIFIED: {answer['reason']}" in result.stderr


def test_blocked_items_stop_it_naming_them_and_how_to_unblock(tmp_path: Path) -> None:
    ws = custom(tmp_path, stall_canon(8, leave_out=range(1, 7)), "partial.py", config="")
    text = ws.config_file.read_text().replace('agent = "scripted"', 'agent = "scripted"\nmax_attempts = 1\nrounds = 1')
    ws.config_file.write_text(text)
    result = run(ws)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert sum(line.startswith("build iteration ") and ": stall: " in line for line in lines) == 2
    explained = [line for line in lines if line.startswith("build: ST-") and "blocked after 1 turn in 1 round" in line]
    assert len(explained) == 2 and all("(build-loop report " in line for line in explained)
    assert lines[-2].startswith("run: nothing can progress: 2 item(s) blocked (ST-7, ST-8)")
    assert "run 'build-loop unblock REQ'" in lines[-2] and f"(-w {ws.root}), then run again" in lines[-2]
    # the last line leads with what waits for a person: the first blocked item, why its check fails, what to do
    assert last_line(result).startswith("run: NOT CERTIFIED: waiting for you: ST-7 is blocked after 1 turn in 1 round")
    assert last_line(result).endswith(f"do: build-loop unblock ST-7 -w {ws.root} (and 1 more: banach status)")


@pytest.mark.slow  # about 20 s: the monitor needs six passes to see the oscillation
def test_a_paused_build_stops_it_with_the_reason(tmp_path: Path) -> None:
    ws = custom(tmp_path, CONTRADICTORY, "flipper.py")
    result = run(ws, "--max-turns", "20")
    assert result.returncode == 1, result.stdout + result.stderr
    assert last_line(result).startswith("run: NOT CERTIFIED: waiting for you: build is paused: the loop oscillates")
    assert "OS-1, OS-2 conflict" in last_line(result) and "do: spec-loop edit DOC" in last_line(result)
    assert result.stdout.strip().splitlines()[-2].endswith("run again once it is fixed")
    assert "build: build paused: the loop oscillates" in result.stdout


def test_a_refused_inbox_stops_it_before_anything_is_measured(tmp_path: Path) -> None:
    ws = custom(tmp_path, stall_canon(1), "partial.py")
    (ws.inbox / "extras.md").write_text("## ST-1: again\n\nduplicate\n")
    result = run(ws)
    assert result.returncode == 1
    assert "spec: refused extras.md:" in result.stdout and "duplicate id" in result.stdout
    assert result.stdout.strip().splitlines()[-2].startswith(
        "run: spec-loop refused the inbox's change (canon did not move)")
    assert last_line(result).startswith("run: NOT CERTIFIED: waiting for you: spec-loop refused the draft "
                                        "inbox/rejected/extras.md: canon did not move: extras.md:")
    assert last_line(result).endswith("do: mv inbox/rejected/extras.md inbox/")
    assert not ws.fix_plan_json.exists()


def test_a_cost_budget_adds_up_what_the_agent_reports(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text(FAKE_CLAUDE.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    ws = custom(tmp_path, stall_canon(2), "no_change.py", config='\n[agents.real]\npreset = "claude"\n' + OPEN)
    ws.config_file.write_text(ws.config_file.read_text().replace('agent = "scripted"', 'agent = "real"'))
    result = cli("banach", "run", "--until-certified", "--max-cost", "1", "--workspace", str(ws.root),
                 env={"PATH": f"{fake.parent}:{os.environ['PATH']}"}, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    builds = [line for line in result.stdout.splitlines() if line.startswith("build iteration ")]
    assert builds[0].endswith("[turn 1, $0.60 of $1.00]") and builds[1].endswith("[turn 2, $1.20 of $1.00]")
    assert last_line(result).startswith("run: NOT CERTIFIED: cost budget spent: $1.20 of $1.00 (--max-cost); residual 2")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_running_turn_cleanly_and_exits_nonzero(tmp_path: Path, sig: signal.Signals) -> None:
    ws = custom(tmp_path, stall_canon(1), "never_returns.py")
    checkpoint = git(ws.code, "rev-parse", "HEAD")
    log = tmp_path / "run.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "shared", "run", "--until-certified", "-w", str(ws.root)],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        assert wait_until(lambda: started(ws), [ws.role_dir("build")], 60), log.read_text()
        proc.send_signal(sig)
        assert proc.wait(timeout=90) == 128 + sig, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    said = log.read_text()
    assert f"run: NOT CERTIFIED: stopped by {sig.name} during build-loop once, which was stopped (its turn rolled " \
           "back and journaled)" in said
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        ended = journal.last("iteration.ended")
    assert ended is not None and ended.data["decision"] == "abandoned"
    assert git(ws.code, "rev-parse", "HEAD") == checkpoint and not git(ws.code, "status", "--porcelain")


def started(ws: Workspace) -> bool:
    journal = Journal.reader(ws.journal_path("build"))
    if journal is None:
        return False
    with journal:
        return journal.last("iteration.started") is not None


UNMEASURED = """## UN-1: the code is pleasant to read

Nobody can check this by a command.
"""


def test_a_canon_that_measures_nothing_is_never_certified(tmp_path: Path) -> None:
    """Its only requirement has no test and no check: a fresh pass finds nothing open, which proves nothing."""
    ws = custom(tmp_path, UNMEASURED, "good.py")
    once = cli("plan-loop", "once", "--workspace", str(ws.root))
    assert "nothing to certify: 1 requirement(s), none measured" in once.stdout, once.stdout
    assert "CERTIFIED" not in once.stdout
    with Journal(ws.journal_path("plan"), readonly=True) as journal:
        assert journal.last("certificate") is None
    assert cli("plan-loop", "certify", "--workspace", str(ws.root)).returncode == 1
    result = run(ws)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "run: NOT CERTIFIED: nothing to certify: canon v1 has 1 requirement(s) and none is measured" in last_line(result)


def test_a_certificate_says_how_many_requirements_it_measured(tmp_path: Path) -> None:
    ws = custom(tmp_path, UNMEASURED + "\n## UN-2: there is a README\nchecks: test -f README.md\n\nIt exists.\n", "good.py")
    git(ws.code, "commit", "-q", "--allow-empty", "-m", "nothing")
    (ws.code / "README.md").write_text("hello\n")
    git(ws.code, "add", "README.md")
    git(ws.code, "commit", "-q", "-m", "readme")
    once = cli("plan-loop", "once", "--workspace", str(ws.root))
    assert "CERTIFIED: a fresh pass found nothing (1 of 2 requirements measured)" in once.stdout, once.stdout
