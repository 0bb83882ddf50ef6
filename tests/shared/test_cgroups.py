"""Runs in their own cgroup: nothing outlives them, whatever it does to its session or environment, and
their processes and memory are bounded. Needs root (or a delegated cgroup), as CI has."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from shared import cgroups
from shared.cgroups import Cgroup, containment_available, layout
from shared.process import GATE, Limits, Outcome, Request, run
from tests.helpers.processes import alive, run_cgroups, wait_gone
from tests.helpers.workspaces import AGENTS

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(containment_available() != "", reason=f"no cgroup containment here: {containment_available()}"),
]
ENV = {"PATH": "/usr/bin:/bin"}
MiB = 2**20


def agent(name: str, *args: str) -> tuple[str, ...]:
    return (sys.executable, str(AGENTS / name), *args)


def bases() -> list[Path]:
    found = layout()
    return [base for base in (found.v2, *(base for _, base in found.v1)) if base is not None]


def run_dirs() -> set[str]:
    """Run cgroups of this test process that exist now."""
    prefix = f"run-{os.getpid()}-"
    return {str(entry) for base in bases() for entry in base.iterdir() if entry.name.startswith(prefix)}


def test_a_grandchild_that_drops_its_session_and_environment_outlives_a_run_without_containment(tmp_path: Path) -> None:
    pid_file = tmp_path / "survivor.pid"
    outcome = run(Request(agent("escapes_turn.py", str(pid_file)), cwd=tmp_path, env=ENV, timeout=20, grace=0.2))
    survivor = int(pid_file.read_text())
    try:
        assert "LEFT ONE BEHIND" in outcome.stdout and outcome.ok
        assert alive(survivor), "the process-group and tag scheme was expected to miss it"
    finally:
        os.kill(survivor, signal.SIGKILL)
        assert wait_gone(survivor)


def test_the_same_grandchild_dies_with_its_contained_run(tmp_path: Path) -> None:
    pid_file = tmp_path / "survivor.pid"
    outcome = run(Request(agent("escapes_turn.py", str(pid_file)), cwd=tmp_path, env=ENV, timeout=20, grace=0.2,
                          limits=Limits()))
    survivor = int(pid_file.read_text())
    assert not alive(survivor)  # the guarantee: the run has returned and it is gone
    assert "LEFT ONE BEHIND" in outcome.stdout and outcome.ok and outcome.reaped == 1 and outcome.capped == ""


def test_a_fork_bomb_is_bounded_by_the_process_limit_and_stopped(tmp_path: Path) -> None:
    outcome = run(Request(agent("fork_bomb.py"), cwd=tmp_path, env=ENV, timeout=30, grace=0.2,
                          limits=Limits(max_processes=16)))
    assert outcome.capped == "process limit 16 reached" and not outcome.ok
    assert not outcome.timed_out and outcome.duration < 20  # stopped when the limit was hit, not at its budget
    assert 1 <= outcome.reaped <= 16


def test_a_memory_hog_is_killed_by_the_memory_limit_and_reported(tmp_path: Path) -> None:
    outcome = run(Request(agent("memory_hog.py"), cwd=tmp_path, env=ENV, timeout=30, limits=Limits(memory_bytes=64 * MiB)))
    assert outcome.returncode == -9 and outcome.capped == "memory limit 64 MiB hit (OOM kill)"
    modest = run(Request(agent("memory_hog.py", "16"), cwd=tmp_path, env=ENV, timeout=30,
                         limits=Limits(memory_bytes=128 * MiB)))
    assert modest.ok and "HELD 16 MiB" in modest.stdout and modest.capped == ""


def test_the_child_runs_inside_its_cgroups_and_they_are_removed_afterwards(tmp_path: Path) -> None:
    outcome = run(Request(("/bin/cat", "/proc/self/cgroup"), cwd=tmp_path, env=ENV, timeout=10,
                          limits=Limits(max_processes=64, memory_bytes=256 * MiB)))
    inside = run_cgroups(outcome.stdout)
    names = {path.rsplit("/", 1)[1] for path in inside}
    assert len(names) == 1 and len(inside) >= 2, outcome.stdout  # one run name, in every hierarchy used
    assert not any((base / name).exists() for base in bases() for name in names)
    assert not run_dirs()


def test_a_contained_process_under_landlock_cannot_move_itself_out(tmp_path: Path) -> None:
    targets = [str(base.parent / "cgroup.procs") for base in bases()]
    sandboxed = (sys.executable, "-I", "-m", "shared.isolation.sandbox", "--write", str(tmp_path), "--",
                 *agent("leaves_cgroup.py", *targets))
    outcome = run(Request(sandboxed, cwd=tmp_path, env=ENV, timeout=20, limits=Limits(max_processes=64)))
    assert outcome.ok, outcome.describe()
    assert outcome.stdout.count("DENIED") == len(targets) and "MOVED" not in outcome.stdout
    assert len(run_cgroups(outcome.stdout)) >= 2


def test_runs_from_several_threads_keep_their_own_cgroups(tmp_path: Path) -> None:
    programs = {
        "bomb": (agent("fork_bomb.py"), Limits(max_processes=12)),
        "printer": (agent("prints_forever.py"), Limits(output_bytes=256 * 1024)),
        **{f"escape{i}": (agent("escapes_turn.py", str(tmp_path / f"escape{i}.pid")), Limits()) for i in range(3)},
        **{f"cat{i}": (("/bin/cat", "/proc/self/cgroup"), Limits(max_processes=50)) for i in range(3)},
    }
    outcomes: dict[str, Outcome] = {}
    start = threading.Barrier(len(programs))

    def one(name: str) -> None:
        argv, limits = programs[name]
        start.wait(timeout=30)
        outcomes[name] = run(Request(argv, cwd=tmp_path, env=ENV, timeout=30, grace=0.2, limits=limits))

    threads = [threading.Thread(target=one, args=(name,)) for name in programs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert outcomes["bomb"].capped == "process limit 12 reached"
    assert outcomes["printer"].capped == "output over 256 KiB"
    assert all(outcomes[f"escape{i}"].ok and outcomes[f"escape{i}"].capped == "" for i in range(3))
    assert not any(alive(int((tmp_path / f"escape{i}.pid").read_text())) for i in range(3))
    names = [{path.rsplit("/", 1)[1] for path in run_cgroups(outcomes[f"cat{i}"].stdout)} for i in range(3)]
    assert all(outcomes[f"cat{i}"].ok and outcomes[f"cat{i}"].capped == "" for i in range(3))
    assert all(len(own) == 1 for own in names) and len(set.union(*names)) == 3  # each in its own, in every hierarchy
    assert not run_dirs()


@pytest.mark.parametrize("killer", ["freezer", "pids"])
def test_the_v1_fallbacks_kill_whole_where_there_is_no_cgroup_kill(killer: str, tmp_path: Path) -> None:
    """Hosts without cgroup2's cgroup.kill kill by freeze, kill, thaw (freezer) or by rounds of SIGKILL (pids)."""
    base = cgroups._banach_parent(killer, cgroups._mounts(), cgroups._own_paths())
    if isinstance(base, str):
        pytest.skip(base)
    folder = base / f"run-{os.getpid()}-{killer}-test"
    folder.mkdir()
    group = Cgroup({killer: folder}, killer, None, None)
    pid_file = tmp_path / "survivor.pid"
    with subprocess.Popen((*GATE, *agent("escapes_turn.py", str(pid_file))), stdout=subprocess.PIPE,
                          start_new_session=True) as proc:
        assert os.WIFSTOPPED(os.waitpid(proc.pid, os.WUNTRACED)[1])
        group.place(proc.pid)
        os.kill(proc.pid, signal.SIGCONT)
        assert proc.stdout is not None and proc.stdout.readline() == b"LEFT ONE BEHIND\n"
    survivor = int(pid_file.read_text())
    assert alive(survivor) and group.members() == {survivor}
    group.kill()  # SIGKILL only: a signal it could catch would prove nothing
    assert wait_gone(survivor) and not group.members()
    group.remove()
    assert not folder.exists()


def test_runs_left_by_a_banach_process_that_was_killed_are_swept(tmp_path: Path) -> None:
    """A governor killed with SIGKILL never runs its `finally`; the next one kills what its runs left."""
    with subprocess.Popen(("true",)) as gone:
        pass  # its pid now names no process: the dead owner
    name = f"run-{gone.pid}-deadbeef0000"
    dirs = {key: base / name for key, base in (("v2", layout().v2), *layout().v1) if base is not None}
    for folder in dirs.values():
        folder.mkdir()
    pid_file = tmp_path / "survivor.pid"
    with subprocess.Popen((*GATE, *agent("escapes_turn.py", str(pid_file))), stdout=subprocess.PIPE,
                          start_new_session=True) as proc:
        assert os.WIFSTOPPED(os.waitpid(proc.pid, os.WUNTRACED)[1])
        Cgroup(dirs, "v2", None, None).place(proc.pid)
        os.kill(proc.pid, signal.SIGCONT)
        assert proc.stdout is not None and proc.stdout.readline() == b"LEFT ONE BEHIND\n"
    survivor = int(pid_file.read_text())
    assert alive(survivor)
    assert name in cgroups.sweep_stale(layout())
    assert not alive(survivor) and not any(folder.exists() for folder in dirs.values())
