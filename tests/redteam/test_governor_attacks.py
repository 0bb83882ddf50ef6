"""Hostile agents against the governor: each runs one real `build-loop once` turn. The promises are in
SECURITY.md; each test names the class of issue 11 it holds."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.processes import alive, pid_of
from tests.helpers.workspaces import HELPERS, cli, git
from tests.redteam.conftest import allow_tampering, pwned

HOSTILE = HELPERS / "agents" / "hostile"


def hostile(name: str) -> str:
    return f"{sys.executable} {HOSTILE / name}"


def turn(ws: Workspace, script: str, *extra: str) -> dict[str, object]:
    result = cli("build-loop", "once", "--workspace", str(ws.root), "--agent-command", hostile(script), *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        row = journal.last("iteration.ended")
    assert row is not None
    return row.data


def agent_output(ws: Workspace, n: int = 1) -> str:
    return cli("build-loop", "report", str(n), "--output", "--workspace", str(ws.root)).stdout


def committed_paths(ws: Workspace, rev: str = "HEAD") -> list[str]:
    return sorted(git(ws.code, "diff", "--name-only", f"{rev}~1", rev).splitlines())


# class 1 -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["none", pytest.param("landlock", marks=pytest.mark.landlock)])
def test_planted_git_configuration_and_hooks_never_run(request: pytest.FixtureRequest, backend: str) -> None:
    ws: Workspace = request.getfixturevalue("wide" if backend == "none" else "wide_landlock")
    data = turn(ws, "git_metadata.py")
    assert pwned(ws) == []
    assert data["decision"] == "keep"
    assert any(".git" in entry for entry in data["hostile"])  # type: ignore[union-attr]
    assert not (ws.code / ".git").exists()
    assert "textkit/slug.py" in committed_paths(ws)
    if backend == "landlock":
        seen = agent_output(ws)
        assert "DENIED ../state/build/code.git/config" in seen
        assert "DENIED ../state/build/code.git/hooks/post-commit" in seen


# class 3 -----------------------------------------------------------------------------------------
@pytest.mark.landlock
def test_planted_modules_are_not_imported_by_banachs_interpreters(wide_landlock: Workspace) -> None:
    ws = wide_landlock
    data = turn(ws, "interpreter_plants.py")
    assert pwned(ws) == []
    # canon's tests judged the right change although the tree holds pytest.py, shared/, conftest.py...
    assert not [f for f in data["failing_after"] if f.startswith("canon:TK-1")], data  # type: ignore[union-attr]
    # ...while the example's own scaffolding sensor (`python -m pytest` run in the tree, the project's
    # business) did import the planted pytest.py, inside the sandbox, and the ratchet rolled the turn back
    assert data["decision"] == "rollback" and "scaffolding-tests" in data["regressions"]  # type: ignore[operator]
    assert "PWNED-pytest" in str(data["excerpt"]) and "Permission denied" in str(data["excerpt"])


@pytest.mark.landlock
def test_plan_measures_a_commit_full_of_plants_without_running_them(wide_landlock: Workspace) -> None:
    ws = wide_landlock
    cli("build-loop", "once", "--workspace", str(ws.root), "--agent-command", hostile("interpreter_plants.py"))
    rerun = cli("build-loop", "once", "--workspace", str(ws.root), "--agent-command", hostile("interpreter_plants.py"))
    assert rerun.returncode == 0
    # the plants land as a person's commit would; then plan measures that commit
    prompt = ws.state / "build" / "iterations" / "1" / "prompt.md"
    plant = subprocess.run([sys.executable, str(HOSTILE / "interpreter_plants.py")], cwd=ws.code, capture_output=True,
                           text=True, env={"PATH": os.environ["PATH"], "BANACH_PROMPT_FILE": str(prompt)})
    assert plant.returncode == 0, plant.stderr
    git(ws.code, "add", "-A")
    git(ws.code, "commit", "-qm", "plants")
    result = cli("plan-loop", "once", "--workspace", str(ws.root))
    assert result.returncode == 0, result.stdout + result.stderr
    assert pwned(ws) == []
    plan = json.loads(ws.fix_plan_json.read_text())
    assert "TK-1" not in {r for item in plan["items"] for r in item["requirements"]}, plan["items"]


# class 4 -----------------------------------------------------------------------------------------
def test_the_fence_sees_what_git_does_not_show(measured: Workspace) -> None:
    ws = measured
    data = turn(ws, "fence_specials.py")
    assert data["decision"] == "keep", data
    hostile_paths = {entry.split(":")[0] for entry in data["hostile"]}  # type: ignore[union-attr]
    assert {"textkit/pipe", "textkit/sock", "textkit/passwd", "textkit/journal", "textkit/nested/.git"} <= hostile_paths
    assert ".gitignore" in data["reverted"]  # type: ignore[operator]
    assert "textkit/secret_payload.py" in data["ignored_removed"]  # type: ignore[operator]
    assert committed_paths(ws) == ["textkit/slug.py"]
    leftovers = {p.name for p in (ws.code / "textkit").iterdir()}
    assert not leftovers & {"pipe", "sock", "passwd", "journal", "nested", "secret_payload.py"}


# class 5 -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("scan", ["scanned", "allowed"])
@pytest.mark.parametrize("script", ["early_exit.py", "patched_runner.py"])
def test_a_forged_test_run_is_not_progress(measured: Workspace, script: str, scan: str) -> None:
    """Twice: the tamper scan stops the turn first; with every kind allowed in canon, the measurement voids it."""
    if scan == "allowed":
        allow_tampering(measured)
    start = git(measured.code, "rev-parse", "HEAD")
    data = turn(measured, script)
    assert data["decision"] == "rollback", data
    assert git(measured.code, "rev-parse", "HEAD") == start
    if scan == "scanned":
        assert "the tamper scan" in str(data["reason"]) and "textkit/slug.py:" in str(data["reason"]), data
    else:
        assert "measurement void" in str(data["excerpt"])


@pytest.mark.parametrize("scan", ["scanned", "allowed"])
@pytest.mark.parametrize("script", ["early_exit.py", "patched_runner.py"])
def test_plan_never_certifies_a_forged_test_run(measured: Workspace, script: str, scan: str) -> None:
    """The cheat lands as a person's commit would (build never keeps it); plan is the judge of record."""
    if scan == "allowed":
        allow_tampering(measured)
    prompt = measured.state / "build" / "prompt-for-plant.md"
    prompt.parent.mkdir(parents=True, exist_ok=True)
    prompt.write_text("Requirements: TK-1\n")
    plant = subprocess.run([sys.executable, str(HOSTILE / script)], cwd=measured.code, capture_output=True, text=True,
                           env={"PATH": os.environ["PATH"], "BANACH_PROMPT_FILE": str(prompt)})
    assert plant.returncode == 0, plant.stderr
    git(measured.code, "add", "-A")
    git(measured.code, "commit", "-qm", "cheat")
    result = cli("plan-loop", "certify", "--workspace", str(measured.root))
    assert "CERTIFIED" not in result.stdout, result.stdout
    plan = json.loads(measured.fix_plan_json.read_text())
    assert "TK-1" in {r for item in plan["items"] for r in item["requirements"]}
    evidence = [e for item in plan["items"] if "TK-1" in item["requirements"] for e in item["evidence"]]
    assert any(e["check"] == "tamper scan" for e in evidence) == (scan == "scanned"), evidence
    assert "MEASUREMENT VOID for TK-1" in result.stdout, result.stdout  # both cheats: no finish, or a canary passing


# class 6 -----------------------------------------------------------------------------------------
def test_recovery_does_not_adopt_the_agents_own_commit(measured: Workspace) -> None:
    """Without Landlock the agent can commit with the governor's trailers and kill build-loop mid-turn;
    recovery must still roll back, because the commit is not the one build journaled."""
    start = git(measured.code, "rev-parse", "HEAD")
    cli("build-loop", "once", "--workspace", str(measured.root), "--agent-command", hostile("forged_recovery.py"))
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        assert journal.last("iteration.ended") is None  # build-loop was killed mid-turn
    result = cli("build-loop", "once", "--workspace", str(measured.root), "--agent-command", hostile("forged_recovery.py"))
    assert "interrupted" in result.stdout, result.stdout + result.stderr
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        first = next(r for r in journal.rows("iteration.ended") if r.data["n"] == 1)
    assert first.data["decision"] == "interrupted"
    assert git(measured.code, "rev-parse", "HEAD") != "" and first.data.get("commit") is None
    assert start in git(measured.code, "rev-list", "HEAD").splitlines()


@pytest.mark.landlock
@pytest.mark.parametrize("reach", ["machine", "turn"])
def test_the_agent_can_neither_kill_build_nor_write_its_git_directory(measured_landlock: Workspace, reach: str) -> None:
    """Landlock's signal scope refuses the kill; in a turn's view build-loop is not even among the processes."""
    text = measured_landlock.config_file.read_text()
    measured_landlock.config_file.write_text(text.replace('backend = "landlock"', f'backend = "landlock"\nreach = "{reach}"'))
    data = turn(measured_landlock, "forged_recovery.py")
    seen = agent_output(measured_landlock)
    expected = "DENIED kill" if reach == "machine" else "NOT FOUND build-loop"
    assert "KILLED" not in seen and expected in seen, seen
    assert data["decision"] == "keep"
    assert git(measured_landlock.code, "log", "-1", "--format=%an") == "banach-build"


# class 7 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["none", pytest.param("landlock", marks=pytest.mark.landlock)])
def test_nothing_the_turn_started_outlives_it(request: pytest.FixtureRequest, backend: str) -> None:
    ws: Workspace = request.getfixturevalue("measured" if backend == "none" else "measured_landlock")
    turn(ws, "outlives_turn.py")
    marker = re.search(r"DAEMON \d+ (\S+)", agent_output(ws)).group(1)  # type: ignore[union-attr]
    assert not alive(pid_of(marker)), f"process {pid_of(marker)} outlived its turn"


@pytest.mark.landlock
def test_nothing_outlives_a_turn_whose_build_loop_was_killed(measured_landlock: Workspace) -> None:
    """SIGKILL of build-loop mid-turn runs no cleanup; the next build-loop start kills the turn's cgroup whole."""
    ws = measured_landlock
    argv = [sys.executable, "-m", "build_loop", "once", "--workspace", str(ws.root), "--agent-command",
            hostile("outlives_turn.py") + " HANG"]
    build = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid_file = ws.code / "daemon.pid"
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    daemon = pid_of(pid_file.read_text().split()[1], wait=10)
    build.kill()
    build.wait()
    assert alive(daemon)  # nothing ran that could have stopped it
    result = cli("build-loop", "once", "--workspace", str(ws.root), "--agent-command", hostile("../good.py"))
    assert "interrupted" in result.stdout, result.stdout + result.stderr
    deadline = time.monotonic() + 10
    while alive(daemon) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(daemon), f"process {daemon} outlived the killed build-loop's restart"


# class 8 -----------------------------------------------------------------------------------------
@pytest.mark.landlock
def test_the_agent_reads_no_key_and_no_supervisor_credential(measured_landlock: Workspace) -> None:
    turn(measured_landlock, "control_plane.py")
    seen = agent_output(measured_landlock)
    assert "READ " not in seen.replace("READ_", ""), seen
    assert "DENIED" in seen


@pytest.mark.landlock
def test_context_commands_run_sandboxed(measured_landlock: Workspace) -> None:
    ws = measured_landlock
    target = ws.canon / "requirements" / "planted.md"
    config = ws.config_file.read_text().replace("[build]", f'[build]\ncontext_commands = ["echo x > {target}; echo done"]', 1)
    ws.config_file.write_text(config)
    turn(Workspace.open(ws.root), "../good.py")
    assert not target.exists()


# class 10 ----------------------------------------------------------------------------------------
def test_a_flood_of_output_is_capped_and_rolled_back(measured: Workspace) -> None:
    config = measured.config_file.read_text().replace("[build]", "[build]\nmax_output_bytes = 2000000", 1)
    measured.config_file.write_text(config)
    start = git(measured.code, "rev-parse", "HEAD")
    data = turn(Workspace.open(measured.root), "floods.py", "--turn-timeout", "60")
    assert data["decision"] == "rollback" and "capped" in str(data["reason"]), data
    assert git(measured.code, "rev-parse", "HEAD") == start
    assert (measured.state / "build" / "iterations" / "1" / "output.txt").stat().st_size < 3_000_000


def test_a_file_over_the_size_limit_caps_the_turn(measured: Workspace) -> None:
    config = measured.config_file.read_text().replace("[build]", "[build]\nmax_file_bytes = 1000000", 1)
    measured.config_file.write_text(config)
    start = git(measured.code, "rev-parse", "HEAD")
    data = turn(Workspace.open(measured.root), "huge_file.py")
    assert data["decision"] == "rollback" and "capped" in str(data["reason"]), data
    assert git(measured.code, "rev-parse", "HEAD") == start
    assert not (measured.code / "textkit" / "slug_data.bin").exists()


@pytest.mark.root
def test_a_fork_bomb_is_bounded(measured: Workspace) -> None:
    config = measured.config_file.read_text().replace("[build]", "[build]\nmax_processes = 64", 1)
    measured.config_file.write_text(config)
    turn(Workspace.open(measured.root), "fork_bomb.py", "--turn-timeout", "60")
    seen = agent_output(measured)
    assert "STOPPED after" in seen, seen
    forked = int(seen.split("STOPPED after ")[1].split()[0])
    assert forked < 64
