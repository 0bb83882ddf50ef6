"""The tamper scan judges the turn, not the project (issue 39; issue 41's second route): a library that has always read
stack frames is not rolled back for lines a turn did not write. Real git repositories, real `build-loop once` turns of
a scripted agent (tests/helpers/agents/frame_fix.py) and real plan passes: the library's old `sys._getframe` stays
where it was while the one-line fix 27 lines below it is kept and certified; a frame read the turn adds is rolled
back, and named by its own line in build's reason and in plan's fix_plan."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from plan_loop.passes import PlanService
from shared.app.init import init_workspace
from shared.measurement.tamper import scan
from shared.workspace import Workspace
from tests.helpers.workspaces import AGENTS, agent, agents_readable, build_once, cli, git, land

LIBRARY = '''"""Where a call came from, for warnings: the first frame outside this module, as a library's ignore list finds it."""
import sys

IGNORED = (__file__,)


def caller(depth=1):
    frame = sys._getframe(depth)
    while frame is not None and frame.f_code.co_filename in IGNORED:
        frame = frame.f_back
    return frame.f_code.co_name if frame is not None else "?"


def warn(message):
    return f"{caller(2)}: {message}"


def lower(value, low):
    """value, or low when it is below."""
    return max(value, low)


def upper(value, high):
    """value, or high when it is above."""
    return min(value, high)


def middle(low, high):
    """The value halfway between low and high."""
    return (low + high) / 2


def clamp(value, low, high):
    """value, held between low and high."""
    return max(low, min(value, high + 1))
'''
DOC = """## LB-1: clamp holds a value between its bounds
paths: lib/frames.py
tests: tests/test_clamp.py

`lib.frames.clamp(value, low, high)` returns value, held between low and high.
"""
TESTS = """from lib.frames import clamp


def test_above_is_high():
    assert clamp(12, 0, 10) == 10


def test_inside_is_itself():
    assert clamp(5, 0, 10) == 5
"""
OLD_READ, FIX = 8, 35  # the library's own frame read, and the line the upstream fix changes: 27 lines below


def library(tmp: Path) -> Path:
    """The project as its upstream has it: a person's repository, before any workspace."""
    source = tmp / "upstream"
    (source / "lib").mkdir(parents=True)
    (source / "lib" / "__init__.py").write_text("")
    (source / "lib" / "frames.py").write_text(LIBRARY)
    git(source, "init", "-q", "-b", "main")
    git(source, "add", "-A")
    git(source, "commit", "-qm", "the library, as released")
    return source


def workspace(tmp: Path, variant: str = "") -> Workspace:
    ws = init_workspace(tmp / "ws", example=False, code_source=str(library(tmp)))
    text = ws.config_file.read_text().replace('backend = "landlock"', 'backend = "none"')
    text = agents_readable(text.replace('agent = "claude"', 'agent = "scripted"'))
    command = f"{agent('frame_fix.py')} {variant}".strip()
    ws.config_file.write_text(text + f'\n[agents.scripted]\npreset = "command"\ncommand = "{command}"\n')
    land(ws, {"requirements/lib.md": DOC, "tests/test_clamp.py": TESTS})
    plan = PlanService(Workspace.open(ws.root))
    try:
        plan.measure()
    finally:
        plan.close()
    return Workspace.open(ws.root)


def test_the_library_reads_frames_where_the_fix_is_made() -> None:
    """What the other tests stand on: the file the fix changes has frame reads of its own, 27 lines above the fix."""
    hits = scan({"lib/frames.py": LIBRARY.encode()})
    assert [(hit.line, hit.kind) for hit in hits] == [(OLD_READ, "frames"), (OLD_READ + 2, "frames")], hits
    assert "high + 1" in LIBRARY.splitlines()[FIX - 1]


def test_a_fix_27_lines_below_an_old_frame_read_is_kept_and_certified(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    data = build_once(ws)
    assert data["decision"] == "keep", data
    committed = git(ws.code, "show", "HEAD:lib/frames.py")
    assert "sys._getframe(depth)" in committed and "min(value, high))" in committed
    certified = cli("plan-loop", "certify", "--workspace", str(ws.root), timeout=300)
    out = certified.stdout + certified.stderr
    assert "CERTIFIED" in out.replace("NOT CERTIFIED", ""), out  # plan holds the start's own frame reads against no one


def test_a_frame_read_the_turn_adds_is_rolled_back_naming_its_line(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "spy")
    start = git(ws.code, "rev-parse", "HEAD")
    data = build_once(ws)
    assert data["decision"] == "rollback" and git(ws.code, "rev-parse", "HEAD") == start, data
    added = FIX + 5  # the spy's sys._getframe(2), below the fix
    reason = str(data["reason"])
    assert reason.startswith("the tamper scan: ") and f"lib/frames.py:{added}: sys._getframe()" in reason, reason
    assert f"lib/frames.py:{OLD_READ}:" not in reason and f"lib/frames.py:{OLD_READ + 2}:" not in reason, reason
    # the same change as a person's commit: plan names the new line, and only it
    subprocess.run([sys.executable, str(AGENTS / "frame_fix.py"), "spy"], cwd=ws.code, check=True, capture_output=True)
    git(ws.code, "commit", "-qam", "the same change, by hand")
    cli("plan-loop", "once", "--workspace", str(ws.root), timeout=300)
    plan = json.loads(ws.fix_plan_json.read_text())
    evidence = [e for item in plan["items"] for e in item["evidence"] if e["check"] == "tamper scan"]
    assert len(evidence) == 1 and f"lib/frames.py:{added}: sys._getframe()" in evidence[0]["excerpt"], plan
    assert f"lib/frames.py:{OLD_READ}:" not in evidence[0]["excerpt"], evidence
