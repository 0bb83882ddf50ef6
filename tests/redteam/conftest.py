"""The red-team suite: one real agent program per way to buy a verdict (issue 11's classes), each run
against the real governor and the real plan pass. A PWNED-* file in the workspace root is the sign that
something the agent wrote ran outside its sandbox; tests assert there is none."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from plan_loop.passes import PlanService
from shared.measurement.tamper import KINDS
from shared.workspace import Workspace
from spec_loop.draft import Draft
from spec_loop.service import SpecService
from tests.helpers.workspaces import example, set_config


@pytest.fixture(scope="session")
def wide_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with TK-1's write scope widened to the whole tree, so planted files survive the fence
    and reach the sensors and plan, and every kind of the tamper scan allowed, so that each defence behind
    it is tried on its own: the hardest case for every class but the fence's own and the scan's."""
    ws = example(tmp_path_factory.mktemp("wide"))
    allow_tampering(ws, paths="**")
    return ws.root


def allow_tampering(ws: Workspace, *, paths: str = "textkit/slug.py", network: bool = False) -> None:
    """TK-1 allows every kind of the tamper scan (and writes `paths`) as a person would say it in canon, then plan
    measures again: the test then tries what the measurement does with code the scan would have stopped.
    network: every requirement's checks reach the network (where planted code reports to the test what it reached)."""
    import re

    document = (ws.canon / "requirements" / "textkit.md").read_text()
    allowed = ", ".join(kind for kind in KINDS if kind != "unreadable")
    document = document.replace("paths: textkit/slug.py\n", f"paths: {paths}\nallows: {allowed}\n", 1)
    if network:
        document = re.sub(r"^(## TK-\d+:.*)$", r"\1\nnetwork: open", document, flags=re.M)
    spec = SpecService(ws)
    with spec.locked():
        decision = spec.decide(Draft("textkit.md", "requirements/textkit.md", document.encode()), source="test")
    spec.close()
    assert decision.accepted, decision.problems
    service = PlanService(Workspace.open(ws.root))
    try:
        service.measure()
    finally:
        service.close()


def _copy(template: Path, target: Path, backend: str) -> Workspace:
    shutil.copytree(template, target, symlinks=True)
    set_config(target, backend=backend)
    text = (target / "banach.toml").read_text()
    text = text.replace('backend = "none"', f'backend = "{backend}"')
    (target / "banach.toml").write_text(text)
    return Workspace.open(target)


@pytest.fixture
def wide(wide_template: Path, tmp_path: Path) -> Workspace:
    """TK-1 may write anywhere in the tree; isolation 'none' (the governor's own checks alone)."""
    return _copy(wide_template, tmp_path / "ws", "none")


@pytest.fixture
def wide_landlock(wide_template: Path, tmp_path: Path) -> Workspace:
    return _copy(wide_template, tmp_path / "ws", "landlock")


def pwned(ws: Workspace) -> list[str]:
    return sorted(p.name for p in ws.root.glob("PWNED-*"))
