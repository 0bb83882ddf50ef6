"""Parallel workers (build.workers = N): real build-loop processes, real lanes and git, a SIMULATED agent.

What must hold: the example and a 12-item plan certify with 2 and 4 workers; items whose scopes may overlap are
never in flight together; a change that is green in its lane but red on main is rolled back at integration and the
item retried from the new main; a build-loop SIGKILLed with turns in flight loses nothing."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shared.errors import JournalError
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import custom, example, git

MODULES = {"banach": "shared", "plan-loop": "plan_loop", "build-loop": "build_loop"}


def parts_canon(count: int, *, shared_scope: range = range(0)) -> str:
    """P-01 .. P-count, each writing parts/pNN.txt; those in shared_scope are granted all of parts/ (they overlap)."""
    blocks = []
    for n in range(1, count + 1):
        scope = "parts/**" if n in shared_scope else f"parts/p{n:02d}.txt"
        blocks.append(f"## P-{n:02d}: part {n:02d}\npriority: 2\npaths: {scope}\nchecks:\n"
                      f"  - grep -qx 'part {n:02d}' parts/p{n:02d}.txt\n\nparts/p{n:02d}.txt says which part it is.\n")
    return "---\narea: parts\n---\n\n" + "\n".join(blocks)


def start(program: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", MODULES[program], *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def run_until_idle(ws: Workspace, agent_command: str = "", timeout: float = 240) -> list[str]:
    """build-loop run until it has nothing left to do, then SIGTERM; what it printed."""
    args = ["run", "-w", str(ws.root)] + (["--agent-command", agent_command] if agent_command else [])
    proc = start("build-loop", *args)
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if "waiting for plan-loop to re-measure" in line or "item(s) blocked" in line or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=120)
    lines += rest.splitlines()
    assert proc.returncode == 0, "\n".join(lines)
    return lines


def plan_once(ws: Workspace) -> str:
    result = subprocess.run([sys.executable, "-m", "plan_loop", "once", "-w", str(ws.root)], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def certify(ws: Workspace, agent_command: str = "", rounds: int = 4) -> list[str]:
    """plan, build until idle, plan again ... until plan certifies; build's lines."""
    printed: list[str] = []
    for _ in range(rounds):
        if "CERTIFIED" in plan_once(ws):
            return printed
        printed += run_until_idle(ws, agent_command)
    shown = "\n".join(printed)
    raise AssertionError(f"not certified after {rounds} rounds:\n{shown}")


def turns(ws: Workspace) -> list[dict[str, object]]:
    """Each agent turn: its item, lane, and when it started and ended (journal times)."""
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        started = {row.data["n"]: (row.ts, row.data) for row in journal.rows("iteration.started")}
        ended = {row.data["n"]: (row.ts, row.data) for row in journal.rows("iteration.ended")}
    return [{"n": n, "item": data["item"], "lane": data.get("lane"), "start": ts, "end": ended[n][0],
             "decision": ended[n][1]["decision"], "ended": ended[n][1]} for n, (ts, data) in started.items() if n in ended]


def overlapping(a: dict[str, object], b: dict[str, object]) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]  # type: ignore[operator]


def most_at_once(spans: list[dict[str, object]]) -> int:
    return max((sum(overlapping(a, b) for b in spans) for a in spans), default=0)


def parts_workspace(tmp: Path, count: int, workers: int, *, shared_scope: range = range(0), sleep: float = 1.0) -> Workspace:
    ws = custom(tmp, parts_canon(count, shared_scope=shared_scope), "parts.py")
    text = ws.config_file.read_text().replace("parts.py", f"parts.py --sleep {sleep}")
    ws.config_file.write_text(text.replace("[build]", f"[build]\nworkers = {workers}", 1))
    return Workspace.open(ws.root)


@pytest.mark.slow
@pytest.mark.parametrize(("workers", "backend"), [
    (2, "none"), pytest.param(4, "landlock", marks=pytest.mark.landlock)])
def test_the_example_certifies_with_parallel_workers(tmp_path: Path, workers: int, backend: str) -> None:
    """With Landlock every lane's agent, sensors and fix commands run in the same sandbox as a single worker's."""
    ws = example(tmp_path, backend=backend)
    ws.config_file.write_text(ws.config_file.read_text().replace("[build]", f"[build]\nworkers = {workers}", 1))
    printed = certify(Workspace.open(ws.root))
    assert f"build-loop: {workers} workers" in "\n".join(printed)
    assert {span["lane"] for span in turns(ws)} <= set(range(1, workers + 1))
    assert git(ws.code, "status", "--porcelain") == ""  # main's work tree is exactly main


@pytest.mark.parametrize("workers", [pytest.param(2, marks=pytest.mark.slow), 4])  # 2: about 10 s, run by CI
def test_twelve_disjoint_items_certify_and_run_at_once(tmp_path: Path, workers: int) -> None:
    ws = parts_workspace(tmp_path, 12, workers)
    certify(ws)
    spans = turns(ws)
    assert sorted(span["item"][:4] for span in spans if span["decision"] == "keep") == [  # type: ignore[index]
        f"P-{n:02d}" for n in range(1, 13)]
    assert most_at_once(spans) >= 2  # they ran side by side
    assert len(git(ws.code, "log", "--format=%H").split()) == 13  # the initial commit and one per item
    _status_and_plot_show_the_workers(ws, workers)


def _status_and_plot_show_the_workers(ws: Workspace, workers: int) -> None:
    from shared.app.status import render, status
    from shared.monitor.plot import figure
    from shared.monitor.series import read_history

    shown = render(status(ws))
    assert f"workers     {workers} lanes" in shown
    assert "throughput  12 kept of 12 turns in" in shown and "kept per minute) this run" in shown
    fig, _ = figure(read_history(ws))
    lanes_axes = next(ax for ax in fig.axes if ax.get_gid() == "lanes-axes")
    bars = [patch for patch in lanes_axes.patches if str(patch.get_gid()).startswith("lane-turn:keep")]
    assert len(bars) == 12
    assert lanes_axes.get_title(loc="left").startswith(f"{workers} workers: 12 kept of 12 turns")


def test_items_whose_scopes_may_overlap_are_never_in_flight_together(tmp_path: Path) -> None:
    ws = parts_workspace(tmp_path, 6, 4, shared_scope=range(1, 4))  # P-01..P-03 may all write parts/**
    certify(ws)
    spans = turns(ws)
    shared = [span for span in spans if str(span["item"])[:4] in ("P-01", "P-02", "P-03")]
    assert len(shared) >= 3
    assert not any(overlapping(a, b) for a in shared for b in shared if a is not b)
    assert most_at_once(spans) >= 2  # the others did run beside them


REGISTRY = """---
area: plugins
---

## R-A: plugin a
paths: plugins/a.txt
checks:
  - test -s plugins/a.txt

Plugin a is registered.

## R-B: plugin b
paths: plugins/b.txt
checks:
  - test -s plugins/b.txt

Plugin b is registered.
"""
UNIQUE_NAMES = """
[[build.sensors]]
name = "registry-unique"
command = "! cat plugins/*.txt 2>/dev/null | sort | uniq -d | grep -q ."
kind = "command"
"""


def test_a_change_red_on_main_is_rolled_back_at_integration_and_retried(tmp_path: Path) -> None:
    ws = custom(tmp_path, REGISTRY, "parts.py", config=UNIQUE_NAMES)
    text = ws.config_file.read_text().replace("parts.py", "parts.py --sleep 1")
    ws.config_file.write_text(text.replace("[build]", "[build]\nworkers = 2", 1))
    ws = Workspace.open(ws.root)
    printed = "\n".join(certify(ws))
    spans = turns(ws)
    red = [span for span in spans if span["ended"].get("integration") == "red"]  # type: ignore[union-attr]
    assert len(red) == 1, printed
    assert "green on main went red with it (registry-unique)" in str(red[0]["ended"]["reason"])  # type: ignore[index]
    assert "integration onto main" in printed
    retried = [span for span in spans if span["item"] == red[0]["item"] and span["decision"] == "keep"]
    assert retried and retried[0]["n"] > red[0]["n"]  # type: ignore[operator]
    names = sorted((ws.code / "plugins" / name).read_text().strip() for name in ("a.txt", "b.txt"))
    assert names == ["alpha", "beta"]


@pytest.mark.root  # the killed run's agents are ended by their cgroups, which need root (or a delegated cgroup)
def test_a_build_loop_killed_with_turns_in_flight_loses_nothing(tmp_path: Path) -> None:
    ws = parts_workspace(tmp_path, 4, 2, sleep=30)
    tag = f"kill-{os.getpid()}-{time.monotonic_ns()}"
    ws.config_file.write_text(ws.config_file.read_text().replace("--sleep 30", f"--sleep 30 --tag {tag}"))
    plan_once(ws)
    head = git(ws.code, "rev-parse", "HEAD")
    proc = start("build-loop", "run", "-w", str(ws.root))
    deadline = time.monotonic() + 120
    try:
        while len(_open(ws)) < 2 or len(_agents(tag)) < 2:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise AssertionError("two turns never started")
            time.sleep(0.2)
    finally:
        proc.kill()
        proc.wait()
    assert git(ws.code, "rev-parse", "HEAD") == head and git(ws.code, "status", "--porcelain") == ""
    ws.config_file.write_text(ws.config_file.read_text().replace("--sleep 30", "--sleep 0"))
    printed = "\n".join(run_until_idle(Workspace.open(ws.root)))
    assert printed.count("was interrupted; lane") == 1  # the last one closed is reported; both are journaled
    assert not _agents(tag), "the killed run's agents were ended by the next start"
    interrupted = [span for span in turns(ws) if span["decision"] == "interrupted"]
    assert len(interrupted) == 2 and all(span["lane"] for span in interrupted)
    assert "CERTIFIED" in plan_once(ws)


def _open(ws: Workspace) -> list[int]:
    path = ws.journal_path("build")
    if not path.exists():
        return []
    try:
        with Journal(path, readonly=True) as journal:
            ended = {row.data["n"] for row in journal.rows("iteration.ended")}
            return [row.data["n"] for row in journal.rows("iteration.started") if row.data["n"] not in ended]
    except JournalError:
        return []  # build-loop is creating it right now: no rows yet


def _agents(tag: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", "--", f"--tag {tag}"], capture_output=True, text=True).stdout
    return out.split()


def test_the_integrator_refuses_a_path_that_main_changed_since_the_turns_base(tmp_path: Path) -> None:
    """Disjoint scopes make this rare (the fence keeps each lane in its scope), so it is checked on the integrator
    itself: a kept path that main also changed since the base is a conflict, and main does not move."""
    from types import SimpleNamespace

    from build_loop.integrator import Integrator
    from build_loop.measure import Measurer
    from build_loop.sensors import Reading
    from canon.store import CanonStore
    from shared.git import GitRepo
    from shared.process import Limits

    ws = parts_workspace(tmp_path, 1, 2)
    main = GitRepo.adopt(ws.code, ws.code_git)
    base = main.head()
    assert base is not None
    (ws.code / "shared.txt").write_text("from main\n")
    moved, _ = main.commit_entries(base, main.hash_files(["shared.txt"]), "main moves", {}, role="build")
    main.publish(moved, base)
    (ws.code / "shared.txt").write_text("from a lane\n")
    entries = main.hash_files(["shared.txt"])
    main.rollback(moved)
    integrator = Integrator(main, Measurer(ws, CanonStore(ws.canon), ws.role_dir("build"), Limits(), tree=ws.code))
    reading = Reading({}, 0.0, "", {})
    turn = SimpleNamespace(checkpoint=base, n=1, scratch=tmp_path / "scratch", sensors=[], canon_dir=tmp_path,
                           before=reading)
    with Journal.for_role(ws, "build") as journal:
        result = integrator.integrate(journal, turn, entries, reading)  # type: ignore[arg-type]
        assert journal.count("iteration.committing") == 0
    assert result.commit is None and result.facts["integration"] == "conflict"
    assert result.facts["conflicts"] == ["shared.txt"]
    assert "shared.txt also changed on main since the turn's base" in result.reason
    assert main.head() == moved and (ws.code / "shared.txt").read_text() == "from main\n"


@pytest.mark.landlock
def test_a_lanes_agent_can_write_neither_main_nor_another_lane(tmp_path: Path) -> None:
    """The same sandbox per lane: writes only its own lane's work tree (and its scratch). A real hostile program."""
    ws = parts_workspace(tmp_path, 4, 2)
    hostile = Path(__file__).resolve().parents[1] / "helpers" / "agents" / "hostile" / "lane_escape.py"
    text = ws.config_file.read_text().replace('backend = "none"', 'backend = "landlock"')
    text = text.replace(f"{Path(__file__).resolve().parents[1] / 'helpers' / 'agents' / 'parts.py'} --sleep 1.0",
                        str(hostile))
    ws.config_file.write_text(text)
    assert str(hostile) in text
    certify(Workspace.open(ws.root))
    outputs = [path.read_text() for path in ws.role_dir("build").glob("iterations/*/output.txt")]
    attempts = [line for text in outputs for line in text.splitlines() if line.startswith(("WROTE", "DENIED"))]
    assert attempts and all(line.startswith("DENIED") for line in attempts), attempts
    assert any("/code/planted.txt" in line for line in attempts) and any("/tree/planted.txt" in line for line in attempts)
    assert not (ws.code / "planted.txt").exists()


def test_changes_waiting_together_are_integrated_as_a_train_and_a_red_one_alone_is_refused(tmp_path: Path) -> None:
    """Three changes wait while the integrator is taken; whoever takes it next takes all three: re-measured on main
    together, the one that makes no progress there is refused, the other two are measured again without it and
    committed one after the other."""
    import threading

    from build_loop.fence import snapshot
    from build_loop.history import ItemHistory
    from build_loop.integrator import Integration, Integrator
    from build_loop.lanes import Lane
    from build_loop.measure import Measurer
    from build_loop.turn import Turn
    from canon.store import CanonStore
    from shared.contracts.fix_plan import FixPlan
    from shared.git import GitRepo
    from shared.process import Limits

    ws = parts_workspace(tmp_path, 4, 4)
    plan_once(ws)
    plan = FixPlan.model_validate_json(ws.fix_plan_json.read_text())
    canon = CanonStore(ws.canon).load()
    main = GitRepo.adopt(ws.code, ws.code_git)
    measure = Measurer(ws, CanonStore(ws.canon), ws.role_dir("build"), Limits(), tree=ws.code)
    integrator = Integrator(main, measure)
    base = main.head()
    assert base is not None
    (ws.code / "parts").mkdir(exist_ok=True)
    (ws.code / "parts" / "p04.txt").write_text("part 04\n")  # main moves on: every change below is re-measured
    moved, _ = main.commit_entries(base, main.hash_files(["parts/p04.txt"]), "main moves", {}, role="build")
    main.publish(moved, base)
    canon_dir = measure.canon_snapshot(canon)
    turns = []
    for number, (item, text) in enumerate(zip(sorted(plan.items, key=lambda i: i.id)[:3],
                                              ["part 01\n", "part 02\n", "not a part\n"], strict=True), start=1):
        lane = Lane.of(ws, number).repo(main, base)
        sensors = measure.sensors(item, canon, canon_dir, None)
        before = measure.at_checkpoint(base, sensors, canon_dir, tmp_path / f"s{number}", None)
        (lane.path / item.scope[0]).parent.mkdir(parents=True, exist_ok=True)
        (lane.path / item.scope[0]).write_text(text)
        entries = snapshot(lane, (item.scope[0],))
        folder = tmp_path / f"turn{number}"
        folder.mkdir()
        turn = Turn(number, item, canon, plan, ItemHistory(), folder, folder / "scratch", base, lane.ref_state(),
                    canon_dir, sensors, before, None)
        turns.append((turn, entries, before))
    results: dict[int, Integration] = {}
    integrator._busy = True  # taken: the three wait together

    def integrate(turn: Turn, entries: dict[str, object], reading: object) -> None:
        with Journal.for_role(ws, "build") as journal:
            results[turn.n] = integrator.integrate(journal, turn, entries, reading)  # type: ignore[arg-type]

    threads = [threading.Thread(target=integrate, args=args) for args in turns]
    for thread in threads:
        thread.start()
    with integrator._changed:
        assert integrator._changed.wait_for(lambda: len(integrator._waiting) == 3, timeout=60)
        integrator._busy = False
        integrator._changed.notify_all()
    for thread in threads:
        thread.join(60)
    assert results[3].commit is None and "no progress" in results[3].reason
    assert results[1].commit and results[2].commit
    assert results[1].facts["remeasured_on_main"] == "by the integrator, with 1 other change(s)"
    assert main.head() in (results[1].commit, results[2].commit)  # one after the other, in the order they arrived
    assert git(ws.code, "rev-list", "--count", f"{moved}..HEAD") == "2"
    assert (ws.code / "parts" / "p01.txt").read_text() == "part 01\n" and not (ws.code / "parts" / "p03.txt").exists()
