"""Anchors (issue 11, class 9): each role's rows carry the other journals' heads, so a journal that is
deleted, cut short and re-signed, or replaced fails `banach journal verify`, even when its own chain and
receipts hold."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import HELPERS, cli, example

ERASER = HELPERS / "agents" / "hostile" / "erases_journal.py"


@pytest.fixture(scope="session")
def ran_template(measured_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The measured example after one real build iteration and the plan pass that follows it."""
    root = tmp_path_factory.mktemp("ran") / "ws"
    shutil.copytree(measured_template, root, symlinks=True)
    for program in ("build-loop", "plan-loop"):
        result = cli(program, "once", "--workspace", str(root))
        assert result.returncode == 0, result.stdout + result.stderr
    return root


@pytest.fixture
def ran(ran_template: Path, tmp_path: Path) -> Workspace:
    shutil.copytree(ran_template, tmp_path / "ws", symlinks=True)
    return Workspace.open(tmp_path / "ws")


def verify(ws: Workspace, *flags: str) -> subprocess.CompletedProcess[str]:
    return cli("banach", "journal", "verify", "--workspace", str(ws.root), *flags)


def erase(ws: Workspace, mode: str) -> None:
    result = subprocess.run([sys.executable, str(ERASER), str(ws.root), mode], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr


def build_head_vouched_by_plan(ws: Workspace) -> tuple[int, int]:
    with Journal(ws.journal_path("plan"), readonly=True) as plan:
        vouching = [row for row in plan.rows() if "build" in row.anchors]
    assert vouching, "plan's pass after the build iteration must anchor build's journal"
    return vouching[-1].seq, vouching[-1].anchors["build"][0]


def test_a_real_run_verifies_with_its_anchors(ran: Workspace) -> None:
    plan_row, build_row = build_head_vouched_by_plan(ran)
    with Journal(ran.journal_path("build"), readonly=True) as build:
        assert build_row == len(build.rows())  # plan saw build's head as it was when plan wrote
    result = verify(ran, "--receipts")
    assert result.returncode == 0, result.stdout
    assert f"build: {build_row} rows, chain holds, receipts verify, anchored by plan up to row {build_row}" in result.stdout


def test_a_deleted_journal_is_missing(ran: Workspace) -> None:
    plan_row, build_row = build_head_vouched_by_plan(ran)
    erase(ran, "delete")
    result = verify(ran)
    assert result.returncode == 1
    assert "build: MISSING: plan's row" in result.stdout
    assert f"vouches for build row {build_row}" in result.stdout and "deleted" in result.stdout, result.stdout


def test_a_truncated_and_resigned_journal_is_caught(ran: Workspace) -> None:
    _, build_row = build_head_vouched_by_plan(ran)
    erase(ran, "truncate")
    result = verify(ran, "--receipts")
    assert result.returncode == 1
    # the forger's chain and receipts hold: only the anchor plan wrote tells
    assert f"build: {build_row - 1} rows, chain holds, receipts verify" in result.stdout, result.stdout
    assert "build: TRUNCATED: plan's row" in result.stdout
    assert f"vouches for build row {build_row}" in result.stdout
    assert f"ends at row {build_row - 1}: rows were removed from its end" in result.stdout


def test_a_replaced_journal_is_caught(ran: Workspace) -> None:
    _, build_row = build_head_vouched_by_plan(ran)
    erase(ran, "replace")
    result = verify(ran, "--receipts")
    assert result.returncode == 1
    assert "build: 6 rows, chain holds, receipts verify" in result.stdout, result.stdout
    assert "build: REPLACED: plan's row" in result.stdout and f"vouches for build row {build_row}" in result.stdout
    assert "replaced by another chain" in result.stdout


def test_every_role_is_pinned_by_the_others(tmp_path: Path) -> None:
    ws = example(tmp_path)
    journals = {role: Journal.for_role(ws, role) for role in ("spec", "plan", "build")}  # type: ignore[arg-type]
    for _ in range(2):
        for journal in journals.values():
            journal.append("step", {})
    for journal in journals.values():
        journal.close()
    assert verify(ws).returncode == 0
    for role in ("spec", "plan", "build"):
        copy = Workspace.open(shutil.copytree(ws.root, tmp_path / f"without-{role}", symlinks=True))
        copy.journal_path(role).unlink()  # type: ignore[arg-type]
        result = verify(copy)
        assert result.returncode == 1 and f"{role}: MISSING" in result.stdout, (role, result.stdout)


def test_stripping_a_rows_anchors_breaks_its_hash(tmp_path: Path) -> None:
    ws = example(tmp_path)
    with Journal.for_role(ws, "build") as build:
        build.append("step", {})
    with Journal.for_role(ws, "plan") as plan:
        row = plan.append("pass", {})
    assert row.anchors["build"][0] == 1
    with sqlite3.connect(ws.journal_path("plan")) as db:
        db.execute("UPDATE rows SET anchors = '' WHERE seq = ?", [row.seq])
    result = verify(ws)
    assert result.returncode == 1 and f"plan: BROKEN at row {row.seq}" in result.stdout


def test_a_fifo_in_place_of_a_journal_neither_blocks_its_peers_nor_verify(tmp_path: Path) -> None:
    ws = example(tmp_path)
    os.mkfifo(ws.journal_path("build"))
    appended = threading.Event()

    def append() -> None:
        with Journal.for_role(ws, "plan") as plan:
            plan.append("pass", {})
        appended.set()

    worker = threading.Thread(target=append, daemon=True)
    worker.start()
    assert appended.wait(30), "plan blocked reading build's head from a FIFO"
    result = verify(ws)
    assert result.returncode == 1 and "build: state/build/journal.db is not a regular file" in result.stdout


def test_a_symlinked_journal_is_refused(tmp_path: Path) -> None:
    ws = example(tmp_path)
    with Journal.for_role(ws, "plan") as plan:
        plan.append("pass", {})
    ws.journal_path("build").symlink_to(ws.journal_path("plan"))
    result = verify(ws)
    assert result.returncode == 1 and "build: state/build/journal.db is not a regular file" in result.stdout
