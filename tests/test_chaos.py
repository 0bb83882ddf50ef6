"""Chaos: SIGKILL a random loop at random moments, 30 times, during a demo run under supervisord.
The run still certifies, every journal verifies, fix_plan parses, and the code holds only kept commits."""
from __future__ import annotations

import json
import os
import random
import signal
from pathlib import Path

import pytest

from shared.app import supervisor
from shared.app.status import status
from shared.contracts import fix_plan as fix_plan_file
from shared.journal import Journal
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import cli, example, git

pytestmark = pytest.mark.slow
KILLS = 30


def journal_size(ws, role: str) -> int:  # type: ignore[no-untyped-def]
    journal = Journal.reader(ws.journal_path(role))
    if journal is None:
        return 0
    with journal:
        return len(journal.rows())


def running_pid(ws, role: str) -> int | None:  # type: ignore[no-untyped-def]
    return next((p.pid for p in supervisor.states(ws) if p.role == role and p.state == "RUNNING"), None)


def test_thirty_random_kills_and_the_run_still_certifies(tmp_path: Path) -> None:
    ws = example(tmp_path, backend="landlock")
    rng = random.Random(20261202)
    kills: list[tuple[str, int]] = []
    supervisor.up(ws)
    try:
        for _ in range(KILLS):
            role = rng.choice(["spec", "plan", "build", "build"])
            before = journal_size(ws, role)
            # a random moment: after 0 to 2 more rows of that role's journal, i.e. somewhere inside its step
            target = before + rng.randint(0, 2)
            wait_until(lambda role=role, target=target: journal_size(ws, role) >= target or status(ws)["certified"],  # type: ignore[arg-type]
                       [ws.role_dir(role)], 20)
            assert wait_until(lambda role=role: running_pid(ws, role), [ws.supervisor_dir], 60), f"{role} did not come back"
            pid = running_pid(ws, role)
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            kills.append((role, pid))
            assert wait_until(lambda role=role, pid=pid: running_pid(ws, role) not in (None, pid), [ws.supervisor_dir], 60)
        assert wait_until(lambda: status(ws)["certified"], [ws.role_dir("plan"), ws.role_dir("build")], 300), \
            json.dumps(status(ws), default=str)
    finally:
        supervisor.down(ws)
    assert len(kills) == KILLS
    assert cli("banach", "journal", "verify", "--receipts", "--workspace", str(ws.root)).returncode == 0
    assert fix_plan_file.read(ws.fix_plan_json) is not None
    assert git(ws.code, "status", "--porcelain") == ""
    subjects = git(ws.code, "log", "--format=%(trailers:key=Banach-Item,valueonly)", "HEAD~1..HEAD")
    assert subjects  # the last commit was kept by the governor
    for line in git(ws.code, "log", "--format=%H %an").splitlines()[:-1]:  # all but the initial commit
        assert line.endswith("banach-build")
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        started = {r.data["n"] for r in journal.rows("iteration.started")}
        ended = {r.data["n"] for r in journal.rows("iteration.ended")}
        interrupted = sum(r.data.get("decision") == "interrupted" for r in journal.rows("iteration.ended"))
    assert started == ended  # no iteration is left open
    counts: dict[str, int] = {}
    for role, _ in kills:
        counts[role] = counts.get(role, 0) + 1
    print(f"CHAOS kills by role: {counts}; build iterations interrupted and recovered: {interrupted}; "
          f"iterations: {len(started)}; plan passes: {status(ws)['plan_passes']}")
