"""Shared fixtures: a measured example workspace, made once and copied per test (a copied workspace must work)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from plan_loop.passes import PlanService
from shared.workspace import Workspace
from tests.helpers.workspaces import example, set_config


@pytest.fixture(scope="session")
def measured_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = example(tmp_path_factory.mktemp("template"))
    service = PlanService(ws)
    try:
        service.measure()
    finally:
        service.close()
    return ws.root


@pytest.fixture
def measured(measured_template: Path, tmp_path: Path) -> Workspace:
    """The example after one plan pass (5 open items), isolation 'none'."""
    target = tmp_path / "ws"
    shutil.copytree(measured_template, target, symlinks=True)
    return Workspace.open(target)


@pytest.fixture
def measured_landlock(measured: Workspace) -> Workspace:
    set_config(measured.root, backend="landlock")
    text = (measured.root / "banach.toml").read_text().replace('backend = "none"', 'backend = "landlock"')
    (measured.root / "banach.toml").write_text(text)
    return Workspace.open(measured.root)
