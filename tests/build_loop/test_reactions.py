"""Build reacts to the monitor, on workspaces made to oscillate (contradictory canon), stall, and stay flat."""
from __future__ import annotations

from pathlib import Path

from plan_loop.passes import PlanService
from shared.contracts import fix_plan as fix_plan_file
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import cli, custom

CONTRADICTORY = """---
area: style
---

## OS-1: indent with tabs
paths: style.txt
checks:
  - grep -qx indent=tabs style.txt

The project is indented with tabs.

## OS-2: indent with spaces
paths: style.txt
checks:
  - grep -qx indent=spaces style.txt

The project is indented with spaces.
"""


def stall_canon(count: int, *, leave_out: range = range(0)) -> str:
    """ST-1 .. ST-count (less leave_out): partial.py solves ST-1 .. ST-6 and never the rest."""
    blocks = [f"## ST-{n}: file {n} exists\npriority: {1 if n <= 6 else 5}\npaths: file{n}.txt\n"
              f"checks:\n  - test -f file{n}.txt\n\nfile{n}.txt exists.\n" for n in range(1, count + 1) if n not in leave_out]
    return "---\narea: stall\n---\n\n" + "\n".join(blocks)


def cycle(ws: Workspace) -> str:
    """One plan pass (in this process: plan-loop once with isolation off is exactly this), then build-loop once."""
    plan = PlanService(Workspace.open(ws.root))
    try:
        plan.measure()
    finally:
        plan.close()
    result = cli("build-loop", "once", "--workspace", str(ws.root))
    assert result.returncode == 0, result.stderr
    return result.stdout


def rows(ws: Workspace, kind: str) -> list:  # type: ignore[type-arg]
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        return journal.rows(kind)


def test_oscillation_pauses_build_and_names_the_conflict(tmp_path: Path) -> None:
    ws = custom(tmp_path, CONTRADICTORY, "flipper.py")
    outputs = [cycle(ws) for _ in range(9)]
    assert any("keep" in out for out in outputs[:3])
    paused = [out for out in outputs if out.startswith("build paused")]
    assert paused, outputs
    assert "OS-1, OS-2 conflict" in paused[0] and "Fix canon" in paused[0]
    flag = next(r.data for r in rows(ws, "monitor.flag") if r.data["label"] == "oscillating")
    assert flag["requirements"] == ["OS-1", "OS-2"] and flag["reason"]
    assert rows(ws, "paused")
    status = cli("banach", "status", "--workspace", str(ws.root)).stdout
    assert "PAUSED      build paused: the loop oscillates" in status and "OS-1, OS-2" in status


def test_a_stall_climbs_the_ladder_and_asks_plan_to_demolish(tmp_path: Path) -> None:
    ws = custom(tmp_path, stall_canon(8), "partial.py")
    text = ws.config_file.read_text().replace('agent = "scripted"',
                                              'agent = "scripted"\nladder = ["scripted", "scripted"]\nmax_attempts = 50')
    ws.config_file.write_text(text)
    outputs = [cycle(ws) for _ in range(15)]
    flags = [r.data for r in rows(ws, "monitor.flag")]
    assert "stalled" in [f["label"] for f in flags], outputs
    requested = rows(ws, "demolish.requested")
    assert requested and requested[0].data["area"] == "stall"
    assert any(r.data.get("reason") == "monitor: stalled" for r in rows(ws, "ladder.climb"))
    said = next(out for out in outputs if out.startswith("monitor: stalled"))
    assert "climbed the ladder for ST-" in said and " to scripted" in said, said
    assert cli("plan-loop", "once", "--workspace", str(ws.root)).returncode == 0
    plan = fix_plan_file.read(ws.fix_plan_json)
    assert plan is not None and {i.kind for i in plan.items} == {"demolish"}
    assert "demolish and rebuild area 'stall'" in plan.items[0].title
    prompt_check = cli("build-loop", "once", "--workspace", str(ws.root))
    assert prompt_check.returncode == 0
    latest = cli("build-loop", "report", "--prompt", "--workspace", str(ws.root)).stdout
    assert "DEMOLISH item" in latest


def test_flat_from_the_start_blames_the_target_not_the_model(tmp_path: Path) -> None:
    ws = custom(tmp_path, stall_canon(8).replace("priority: 1", "priority: 5"), "no_change.py")
    outputs = [cycle(ws) for _ in range(4)]
    flags = [r.data for r in rows(ws, "monitor.flag")]
    assert flags and flags[0]["label"] == "flat", outputs
    assert any("the target or the context is the problem, not the model" in out for out in outputs)


def test_a_stall_on_a_one_rung_ladder_says_there_is_nothing_to_climb(tmp_path: Path) -> None:
    ws = custom(tmp_path, stall_canon(8, leave_out=range(4, 7)), "partial.py")  # 'scripted' is the only rung
    plan = PlanService(ws)
    try:
        assert plan.run_pass().residual == 5
        kept = [cycle_build(ws) for _ in range(3)]
        assert all(": keep:" in out for out in kept), kept
        assert [plan.run_pass().residual for _ in range(5)] == [2] * 5  # from 5 to 2, then no progress: a stall
    finally:
        plan.close()
    out = cycle_build(ws)
    assert out.startswith("monitor: stalled"), out
    assert "the ladder has one rung (scripted), so nothing to climb: add a stronger rung to build.ladder" in out
    assert "climbed" not in out and not rows(ws, "ladder.climb")
    assert "asked plan to demolish and rebuild area stall" in out and rows(ws, "demolish.requested")


def cycle_build(ws: Workspace) -> str:
    result = cli("build-loop", "once", "--workspace", str(ws.root))
    assert result.returncode == 0, result.stderr
    return result.stdout
