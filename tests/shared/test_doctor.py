"""`banach doctor` on a workspace whose banach.toml does not load: the error is the first finding, and it exits 1."""
from __future__ import annotations

from pathlib import Path

from tests.helpers.workspaces import cli, example


def test_a_workspace_that_does_not_load_is_a_finding(tmp_path: Path) -> None:
    ws = example(tmp_path)
    ws.config_file.write_text(ws.config_file.read_text().replace("[build]", "[build]\nworkerz = 2", 1))
    done = cli("banach", "doctor", "-w", str(ws.root))
    assert done.returncode == 1, done.stdout
    assert "FIX   workspace" in done.stdout and "workerz" in done.stdout, done.stdout
    assert "checking the machine only" not in done.stdout


def test_no_workspace_checks_the_machine_only(tmp_path: Path) -> None:
    done = cli("banach", "doctor", "-w", str(tmp_path))
    assert "no workspace at" in done.stdout and "checking the machine only" in done.stdout, done.stdout
