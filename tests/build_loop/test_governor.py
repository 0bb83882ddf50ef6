"""Each misbehaviour of an agent, as a real program, against the real governor: the governed outcome
and a journal entry. The item is the example's TK-1 (scope textkit/slug.py) unless said otherwise."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.processes import alive
from tests.helpers.workspaces import agent, cli, git


def once(ws: Workspace, script: str, *extra: str, env: dict[str, str] | None = None) -> str:
    result = cli("build-loop", "once", "--workspace", str(ws.root), "--agent-command", agent(script), *extra, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def last_iteration(ws: Workspace) -> dict[str, object]:
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        row = journal.last("iteration.ended")
    assert row is not None
    return row.data


def output(ws: Workspace, n: int) -> str:
    return cli("build-loop", "report", str(n), "--output", "--workspace", str(ws.root)).stdout


def head(ws: Workspace) -> str:
    return git(ws.code, "rev-parse", "HEAD")


def test_good_agent_is_kept_with_trailers(measured: Workspace) -> None:
    start = head(measured)
    once(measured, "good.py")
    data = last_iteration(measured)
    assert data["decision"] == "keep"
    message = git(measured.code, "log", "-1", "--format=%B")
    assert re.search(r"^Banach-Item: TK-1\.\w+$", message, re.M)
    assert "Canon-Version: 1" in message and "Banach-Iteration: 1" in message
    assert git(measured.code, "rev-parse", "HEAD~1") == start


def test_out_of_scope_edits_are_reverted_and_recorded(measured: Workspace) -> None:
    once(measured, "out_of_scope.py")
    data = last_iteration(measured)
    assert data["decision"] == "keep"
    assert sorted(data["reverted"]) == ["README.md", "textkit/extra.py"]
    assert not (measured.code / "textkit" / "extra.py").exists()
    assert "out of scope" not in (measured.code / "README.md").read_text()
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        assert journal.last("scope.fighting") is not None


def test_agent_commit_is_undone_and_the_governor_commits(measured: Workspace) -> None:
    start = head(measured)
    once(measured, "commits.py")
    data = last_iteration(measured)
    assert data["decision"] == "keep"
    assert any("HEAD moved" in v for v in data["guard_violations"])
    assert git(measured.code, "log", "--format=%an", f"{start}..HEAD") == "banach-build"


def test_agent_reset_cannot_move_the_checkpoint(measured: Workspace) -> None:
    once(measured, "good.py")
    kept = head(measured)
    once(measured, "resets.py")
    data = last_iteration(measured)
    assert data["decision"] == "stall"
    assert any("HEAD moved" in v for v in data["guard_violations"])
    assert head(measured) == kept
    assert (measured.code / "textkit" / "slug.py").exists()


def test_checkout_and_stash_are_undone(measured: Workspace) -> None:
    once(measured, "checks_out.py")
    data = last_iteration(measured)
    assert any("switched" in v for v in data["guard_violations"])
    assert git(measured.code, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert "agent-branch" not in git(measured.code, "branch", "--list")
    assert git(measured.code, "stash", "list") == ""
    assert data["decision"] == "keep"


def test_skip_worktree_is_cleared_and_the_hidden_edit_reverted(measured: Workspace) -> None:
    once(measured, "skip_worktree.py")
    data = last_iteration(measured)
    assert any("index flag hides textkit/__init__.py" in v for v in data["guard_violations"])
    assert "textkit/__init__.py" in data["reverted"]
    assert "HIDDEN" not in (measured.code / "textkit" / "__init__.py").read_text()
    assert git(measured.code, "ls-files", "-v", "textkit/__init__.py").startswith("H ")


def test_processes_left_behind_are_reaped_even_in_a_new_session(measured: Workspace) -> None:
    once(measured, "leaves_processes.py")
    pids = [int(p) for p in re.search(r"PIDS (\d+) (\d+)", output(measured, 1)).groups()]  # type: ignore[union-attr]
    assert not any(alive(pid) for pid in pids)
    assert last_iteration(measured)["reaped"] >= 2


def test_agent_that_never_returns_is_killed_at_its_budget(measured: Workspace) -> None:
    once(measured, "never_returns.py", "--turn-timeout", "2")
    data = last_iteration(measured)
    assert data["timed_out"] is True
    assert data["decision"] == "rollback"  # its wrong edit was judged, and failed
    assert not (measured.code / "textkit" / "slug.py").exists()


def test_no_change_with_a_claim_of_success_is_a_stall(measured: Workspace) -> None:
    start = head(measured)
    once(measured, "no_change.py")
    data = last_iteration(measured)
    assert data["decision"] == "stall"
    assert data["claimed_success"] is True
    assert head(measured) == start


def test_fake_success_is_rolled_back_and_remembered(measured: Workspace) -> None:
    start = head(measured)
    once(measured, "fake_success.py")
    data = last_iteration(measured)
    assert data["decision"] == "rollback"
    assert head(measured) == start and git(measured.code, "status", "--porcelain") == ""
    once(measured, "good.py")
    prompt = cli("build-loop", "report", "2", "--prompt", "--workspace", str(measured.root)).stdout
    assert "Attempts that were rolled back" in prompt and "iteration 1" in prompt


def test_deleting_a_passing_test_trips_the_ratchet(measured: Workspace) -> None:
    from plan_loop.passes import PlanService
    from spec_loop.draft import Draft
    from spec_loop.service import SpecService

    spec = SpecService(measured)
    text = spec.store.read("HEAD", "requirements/textkit.md") or ""
    wider = text.replace("paths: textkit/slug.py\n", "paths: textkit/slug.py, tests/**\n")
    with spec.locked():
        assert spec.decide(Draft("textkit.md", "requirements/textkit.md", wider.encode()), source="test").accepted
    spec.close()
    plan = PlanService(measured)
    plan.measure()
    plan.close()
    once(measured, "deletes_test.py")
    data = last_iteration(measured)
    assert data["decision"] == "rollback"
    assert any("test_smoke.py::test_package_imports" in r for r in data["regressions"])
    assert (measured.code / "tests" / "test_smoke.py").exists()


def test_environment_is_allow_listed(measured: Workspace) -> None:
    once(measured, "reads_env.py", env={"OPERATOR_SECRET_TOKEN": "hunter2"})
    seen = output(measured, 1)
    assert "hunter2" not in seen and "OPERATOR_SECRET_TOKEN" not in seen
    assert "ENV BANACH_PROMPT_FILE=" in seen and "ENV BANACH_ITEM=TK-1." in seen
    assert "ENV PATH=" in seen


def test_usage_limit_is_neither_progress_nor_failure(measured: Workspace) -> None:
    once(measured, "rate_limited.py")
    data = last_iteration(measured)
    assert data["decision"] == "rate_limited"
    assert data["resets_at"] == 4102444800.0
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        assert not journal.rows("item.blocked") and not journal.rows("ladder.climb")


def test_attempts_are_bounded_and_the_item_is_blocked(measured: Workspace) -> None:
    text = (measured.root / "banach.toml").read_text().replace("max_attempts = 4", "max_attempts = 2")
    (measured.root / "banach.toml").write_text(text)
    once(measured, "no_change.py")
    once(measured, "no_change.py")
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        blocked = journal.rows("item.blocked")
    assert len(blocked) == 1 and blocked[0].data["item"].startswith("TK-1.")
    assert blocked[0].data["evidence"]["reason"]
    once(measured, "good.py")  # the loop goes on with other items
    assert last_iteration(measured)["item"].startswith("TK-2.")


def test_a_blocked_item_is_named_with_its_reason_and_can_be_unblocked(measured: Workspace) -> None:
    text = (measured.root / "banach.toml").read_text().replace("max_attempts = 4", "max_attempts = 1")
    (measured.root / "banach.toml").write_text(text)
    once(measured, "no_change.py")
    blocked_item = last_iteration(measured)["item"]
    shown = cli("banach", "status", "--workspace", str(measured.root)).stdout
    # the round changed nothing, so it waits for a person at once (issue 43); why its test fails leads the reason
    assert (f"BLOCKED     TK-1 (item {blocked_item}): blocked after 1 turn in 1 round (no attempt of that round changed "
            "anything, so no further round without a person): tests/test_slug.py:1: ModuleNotFoundError: No module named "
            "'textkit.slug'; the last turn: the turn left no change in scope (build-loop report 1)") in shown, shown
    assert f"do:  build-loop unblock TK-1 -w {measured.root}" in shown
    wrong = cli("build-loop", "unblock", "TK-9.nothing", "--workspace", str(measured.root))
    assert wrong.returncode == 1 and f"blocked now: TK-1 (item {blocked_item})" in wrong.stderr
    result = cli("build-loop", "unblock", str(blocked_item), "--workspace", str(measured.root))
    assert result.returncode == 0 and f"unblocked TK-1 (item {blocked_item})" in result.stdout
    assert "BLOCKED" not in cli("banach", "status", "--workspace", str(measured.root)).stdout
    once(measured, "good.py")  # a fresh budget: the same item is taken again, and kept
    assert last_iteration(measured)["item"] == blocked_item and last_iteration(measured)["decision"] == "keep"


def test_ladder_climbs_after_stall_patience(measured: Workspace) -> None:
    config = measured.root / "banach.toml"
    text = config.read_text().replace('agent = "sim"', 'agent = "sim"\nladder = ["cheap", "strong"]')
    config.write_text(text + f'\n[agents.cheap]\npreset = "command"\ncommand = "{agent("no_change.py")}"\n'
                             f'\n[agents.strong]\npreset = "command"\ncommand = "{agent("good.py")}"\n')
    for _ in range(2):
        cli("build-loop", "once", "--workspace", str(measured.root))
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        climbs = journal.rows("ladder.climb")
    assert [(c.data["from_agent"], c.data["to_agent"]) for c in climbs] == [("cheap", "strong")]
    cli("build-loop", "once", "--workspace", str(measured.root))
    assert last_iteration(measured)["decision"] == "keep"


def test_report_replays_the_decision(measured: Workspace) -> None:
    once(measured, "out_of_scope.py")
    text = cli("build-loop", "report", "--workspace", str(measured.root)).stdout
    assert "decision: keep" in text and "reverted: README.md" in text


def test_sim_agent_is_labelled(measured: Workspace) -> None:
    result = cli("build-loop", "once", "--workspace", str(measured.root))
    assert "SIMULATED" in result.stderr
    assert "SIMULATED AGENT" in output(measured, 1)
    started = json.dumps(Journal(measured.journal_path("build"), readonly=True).last("iteration.started").data)  # type: ignore[union-attr]
    assert "SIMULATED" in started


def with_reach(ws: Workspace, reach: str) -> Workspace:
    """reach 'machine': Landlock's write rules alone; 'turn': the turn's own view first, where the stores are absent."""
    text = (ws.root / "banach.toml").read_text().replace('backend = "landlock"', f'backend = "landlock"\nreach = "{reach}"')
    (ws.root / "banach.toml").write_text(text)
    return Workspace.open(ws.root)


def refused(seen: str, store: str, reach: str) -> bool:
    """Landlock says EACCES; in a view the store is not there at all, or its folder is the view's own, read-only."""
    return f"DENIED {store}: EACCES" in seen or (reach == "turn" and f"DENIED {store}: ENOENT" in seen)


@pytest.mark.landlock
@pytest.mark.parametrize("reach", ["machine", "turn"])
def test_agent_cannot_write_canon_or_conformance_tests(measured_landlock: Workspace, reach: str) -> None:
    ws = with_reach(measured_landlock, reach)
    canon_before = git(ws.canon, "status", "--porcelain")
    once(ws, "writes_canon.py")
    seen = output(ws, 1)
    assert refused(seen, "../canon/requirements/textkit.md", reach), seen
    assert refused(seen, "../canon/tests/test_slug.py", reach), seen
    assert git(ws.canon, "status", "--porcelain") == canon_before == ""
    assert last_iteration(ws)["decision"] == "keep"


@pytest.mark.landlock
@pytest.mark.parametrize("reach", ["machine", "turn"])
def test_agent_cannot_write_fix_plan_journal_keys_or_outside(measured_landlock: Workspace, tmp_path: Path,
                                                             reach: str) -> None:
    ws = with_reach(measured_landlock, reach)
    outside = tmp_path / "outside.txt"
    before = {name: (ws.root / name).read_bytes() for name in ("plan/fix_plan.json", "banach.toml")}
    cli("build-loop", "once", "--workspace", str(ws.root), "--agent-command", agent("writes_stores.py") + f" {outside}")
    seen = output(ws, 1)
    stores = ("../plan/fix_plan.json", "../state/build/journal.db", "../state/keys/build.key", "../banach.toml", str(outside))
    for store in stores:
        assert refused(seen, store, reach), seen
    assert not outside.exists()
    assert before == {name: (ws.root / name).read_bytes() for name in before}
    assert cli("banach", "journal", "verify", "--workspace", str(ws.root)).returncode == 0


def test_without_landlock_canon_edits_still_do_not_count(measured: Workspace) -> None:
    """Second line: sensors read canon from git objects, so a scribbled canon work tree changes nothing."""
    once(measured, "writes_canon.py")
    assert "WROTE ../canon/tests/test_slug.py" in output(measured, 1)
    from canon.store import CanonStore

    assert CanonStore(measured.canon).version() == 1
    assert "TK-99" not in (CanonStore(measured.canon).read("HEAD", "requirements/textkit.md") or "")
    assert last_iteration(measured)["decision"] == "keep"  # judged against canon v1's real tests


@pytest.mark.landlock
@pytest.mark.parametrize("reach", ["machine", "turn"])
def test_agent_cannot_read_the_receipt_keys(measured_landlock: Workspace, reach: str) -> None:
    once(with_reach(measured_landlock, reach), "reads_keys.py")
    seen = output(measured_landlock, 1)
    assert refused(seen, "../state/keys/build.key", reach) and refused(seen, "../state/keys/plan.key", reach), seen
    assert "# textkit" in seen  # the rest of the world stays readable
    assert last_iteration(measured_landlock)["decision"] == "keep"
