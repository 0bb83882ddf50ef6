"""plan-loop run's cadence: when a pass is due, for each configured reason, and when it is not."""
from __future__ import annotations

import time

from plan_loop.passes import PlanService
from plan_loop.run import due
from shared.workspace import Workspace
from tests.helpers.workspaces import cli, git

EXTRA_DOC = """## EX-1: a note
paths: textkit/note.py

Prose only.
"""


def service_with(ws: Workspace, plan_settings: str) -> PlanService:
    text = ws.config_file.read_text().replace("[plan]\n", f"[plan]\n{plan_settings}\n")
    ws.config_file.write_text(text)
    return PlanService(Workspace.open(ws.root))


def land_commit(ws: Workspace, name: str) -> None:
    (ws.code / name).write_text("x\n")
    git(ws.code, "add", name)
    git(ws.code, "commit", "-q", "-m", f"add {name}")


def test_nothing_is_due_while_the_last_pass_still_describes_v_and_c(measured: Workspace) -> None:
    service = service_with(measured, "")
    try:
        assert due(service, time.monotonic()) == ""  # measured's pass found work: no certify pass either
    finally:
        service.close()


def test_a_pass_is_due_after_every_n_build_commits(measured: Workspace) -> None:
    service = service_with(measured, "replan_every_commits = 3")
    try:
        land_commit(measured, "a.txt")
        land_commit(measured, "b.txt")
        assert due(service, time.monotonic()) == ""
        land_commit(measured, "c.txt")
        assert due(service, time.monotonic()) == "3 build commit(s) landed"
    finally:
        service.close()


def test_a_rewritten_history_is_due_at_once_whatever_n_says(measured: Workspace) -> None:
    service = service_with(measured, "replan_every_commits = 5")
    try:
        git(measured.code, "commit", "-q", "--amend", "-m", "rewritten")  # the measured commit is no longer on HEAD
        assert due(service, time.monotonic()).endswith("build commit(s) landed")
    finally:
        service.close()


def test_a_canon_version_is_due_unless_turned_off(measured: Workspace) -> None:
    added = cli("spec-loop", "add", "--name", "extras.md", "--workspace", str(measured.root), "--", EXTRA_DOC)
    assert added.returncode == 0, added.stdout + added.stderr
    on = service_with(measured, "")
    try:
        assert due(on, time.monotonic()) == "canon v2"
    finally:
        on.close()
    off = service_with(measured, "replan_on_canon_change = false")
    try:
        assert due(off, time.monotonic()) == ""
    finally:
        off.close()


def test_the_timer_makes_a_pass_due_when_nothing_else_does(measured: Workspace) -> None:
    service = service_with(measured, "replan_interval_seconds = 5")
    try:
        assert due(service, time.monotonic()) == ""
        assert due(service, time.monotonic() - 6) == "timer"
    finally:
        service.close()
