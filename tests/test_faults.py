"""Faults a person may meet: a full disk under a journal, a corrupted journal, a lock left behind in canon.
After each: nothing lost, the workspace consistent, and a message that says what to do."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from canon.store import CanonStore
from shared.workspace import Workspace
from tests.helpers.workspaces import cli


@pytest.mark.root
def test_a_full_disk_under_plan_state_is_a_clear_error_and_loses_nothing(measured: Workspace) -> None:
    state = measured.role_dir("plan")
    saved = measured.root / "plan-state-saved"
    shutil.copytree(state, saved)
    before = measured.fix_plan_json.read_text()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(state)], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        shutil.copytree(saved, state, dirs_exist_ok=True)
        filler = state / "filler"
        with filler.open("wb", buffering=0) as handle:  # unbuffered: no write is left for close() to fail on
            try:
                while True:
                    handle.write(b"\0" * 65536)
            except OSError:
                pass
        result = cli("plan-loop", "once", "--workspace", str(measured.root))
        assert result.returncode == 1, result.stdout + result.stderr
        assert "disk" in result.stderr.lower() or "No space left" in result.stderr
        assert "crashed" not in result.stderr
        assert measured.fix_plan_json.read_text() == before  # the previous measurement stands whole
        filler.unlink()
        assert cli("banach", "journal", "verify", "--workspace", str(measured.root)).returncode == 0
        assert cli("plan-loop", "once", "--workspace", str(measured.root)).returncode == 0
    finally:
        subprocess.run(["umount", str(state)], check=False)


def test_a_corrupted_journal_is_named_and_the_loop_refuses_clearly(measured: Workspace) -> None:
    measured.journal_path("build").parent.mkdir(parents=True, exist_ok=True)
    measured.journal_path("build").write_bytes(os.urandom(4096))
    verify = cli("banach", "journal", "verify", "--workspace", str(measured.root))
    assert verify.returncode == 1 and "build:" in verify.stdout
    result = cli("build-loop", "once", "--workspace", str(measured.root))
    assert result.returncode == 1
    assert "state/build/journal.db" in result.stderr and "crashed" not in result.stderr


def test_a_lock_left_in_canon_says_how_to_recover(measured: Workspace) -> None:
    lock = measured.canon / ".git" / "index.lock"
    lock.write_text("")
    (measured.inbox / "extras.md").write_text("## EX-1: reverse\npaths: textkit/reverse.py\n\nReverses.\n")
    result = cli("spec-loop", "once", "--workspace", str(measured.root))
    assert result.returncode == 1
    assert "lock file was left behind" in result.stderr and "index.lock" in result.stderr
    assert CanonStore(measured.canon).version() == 1
    assert (measured.inbox / "extras.md").exists()  # the draft waits; nothing lost
    lock.unlink()
    assert cli("spec-loop", "once", "--workspace", str(measured.root)).returncode == 0
    assert CanonStore(measured.canon).version() == 2
    assert json.loads(cli("banach", "status", "--json", "--workspace", str(measured.root)).stdout)["canon_version"] == 2


def test_a_draft_interrupted_mid_write_is_not_taken_half(measured: Workspace, tmp_path: Path) -> None:
    (measured.inbox / ".extras.md.swp").write_text("## EX-1: half")
    (measured.inbox / "extras.md.tmp").write_text("## EX-1: half")
    result = cli("spec-loop", "once", "--workspace", str(measured.root))
    assert result.returncode == 0 and "inbox is empty" in result.stdout
