"""The plan loop is the judge: it regenerates from (V, C) alone, memoizes honestly, and certifies only fresh."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from plan_loop.passes import PlanService
from shared.app.status import status
from shared.contracts import fix_plan as fix_plan_file
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import agent, cli, git


def measure(ws: Workspace, **kwargs: object) -> list:  # type: ignore[type-arg]
    service = PlanService(ws)
    try:
        return service.measure(**kwargs)  # type: ignore[arg-type]
    finally:
        service.close()


def one_pass(ws: Workspace, *, fresh: bool = False):  # type: ignore[no-untyped-def]
    service = PlanService(ws)
    try:
        return service.run_pass(fresh=fresh)
    finally:
        service.close()


def test_fix_plan_has_provenance_items_and_unmeasured(measured: Workspace) -> None:
    plan = fix_plan_file.read(measured.fix_plan_json)
    assert plan is not None
    assert plan.canon_version == 1 and plan.code_commit == git(measured.code, "rev-parse", "HEAD")
    assert plan.residual == 5 and [i.requirements[0] for i in plan.items] == ["TK-1", "TK-2", "TK-3", "TK-5", "TK-4"]
    assert plan.unmeasured == ("TK-6",)
    tk5 = next(i for i in plan.items if i.requirements == ("TK-5",))
    assert set(tk5.depends_on) == {i.id for i in plan.items if i.requirements[0] in ("TK-1", "TK-2")}
    assert all(i.kind == "implement" for i in plan.items)
    assert "Residual: 5 open item(s)" in measured.fix_plan_md.read_text()


def test_regeneration_undoes_hand_edits(measured: Workspace) -> None:
    before = json.loads(measured.fix_plan_json.read_text())
    edited = dict(before)
    edited["items"] = before["items"][1:] + [{**before["items"][0], "id": "INVENTED-1.000000"}]
    measured.fix_plan_json.write_text(json.dumps(edited))
    one_pass(measured)
    after = json.loads(measured.fix_plan_json.read_text())
    assert [i["id"] for i in after["items"]] == [i["id"] for i in before["items"]]


def test_the_same_gap_gives_the_same_id(measured: Workspace) -> None:
    first = [i.id for i in fix_plan_file.read(measured.fix_plan_json).items]  # type: ignore[union-attr]
    one_pass(measured, fresh=True)
    assert [i.id for i in fix_plan_file.read(measured.fix_plan_json).items] == first  # type: ignore[union-attr]


def test_a_memoized_pass_on_unchanged_inputs_runs_no_check(measured: Workspace) -> None:
    report = one_pass(measured)  # TK-1 to TK-5: conformance tests and sealed cases each
    assert report.checks_run == 0 and report.checks_memoized == 10
    fresh = one_pass(measured, fresh=True)
    assert fresh.checks_run == 10


def test_memo_key_covers_exactly_what_a_check_reads(measured: Workspace) -> None:
    (measured.code / "textkit" / "count.py").write_text("def word_count(text):\n    return len(text.split())\n")
    git(measured.code, "add", "-A")
    git(measured.code, "commit", "-qm", "count")
    report = one_pass(measured)
    # TK-2 reads textkit/count.py, TK-5 reads textkit/**: their tests and sealed cases re-run; the rest are memoized
    assert report.checks_run == 4 and report.checks_memoized == 6
    assert report.residual == 4


def test_plan_measures_head_not_the_work_tree(measured: Workspace) -> None:
    from build_loop.sim_agent import reference_root

    (measured.code / "textkit" / "slug.py").write_text((reference_root() / "TK-1" / "right" / "textkit" / "slug.py").read_text())
    assert one_pass(measured, fresh=True).residual == 5  # uncommitted work does not count


def test_certificate_only_from_a_fresh_pass_and_stale_after_a_commit(measured: Workspace) -> None:
    from build_loop.sim_agent import reference_root

    for rid in ("TK-1", "TK-2", "TK-3", "TK-4", "TK-5"):
        source = reference_root() / rid / "right"
        for path in source.rglob("*.py"):
            target = measured.code / path.relative_to(source)
            target.write_text(path.read_text())
    git(measured.code, "add", "-A")
    git(measured.code, "commit", "-qm", "everything")
    reports = measure(measured)
    assert [r.residual for r in reports] == [0, 0]
    assert [r.certified for r in reports] == [False, True]
    assert status(measured)["certified"] is True
    (measured.code / "NOTES.md").write_text("x\n")
    git(measured.code, "add", "-A")
    git(measured.code, "commit", "-qm", "a commit lands")
    info = status(measured)
    assert info["certified"] is False and info["residual"] == 0
    assert cli("plan-loop", "certify", "--workspace", str(measured.root)).returncode == 0
    assert status(measured)["certified"] is True


def test_certify_exits_1_when_something_is_open(measured: Workspace) -> None:
    result = cli("plan-loop", "certify", "--workspace", str(measured.root))
    assert result.returncode == 1 and "residual 5" in result.stdout


def test_a_timed_out_check_fails_with_a_constant_fingerprint(measured: Workspace) -> None:
    from spec_loop.draft import Draft
    from spec_loop.service import SpecService

    text = (measured.root / "banach.toml").read_text().replace("check_timeout = 60", "check_timeout = 0.5")
    (measured.root / "banach.toml").write_text(text)  # before intake too: its dry run waits out the same timeout
    ws = Workspace.open(measured.root)
    spec = SpecService(ws)
    with spec.locked():
        slow_doc = b"## SL-1: slow\npaths: slow.py\nchecks:\n  - sleep 30\n\nNever finishes in time.\n"
        decision = spec.decide(Draft("slow.md", "requirements/slow.md", slow_doc), source="test")
    spec.close()
    assert decision.accepted
    first = one_pass(ws, fresh=True)
    plan = fix_plan_file.read(ws.fix_plan_json)
    slow = next(i for i in plan.items if i.requirements == ("SL-1",))  # type: ignore[union-attr]
    assert slow.evidence[0].timed_out and slow.evidence[0].fingerprint == "timeout"
    one_pass(ws, fresh=True)
    again = next(i for i in fix_plan_file.read(ws.fix_plan_json).items if i.requirements == ("SL-1",))  # type: ignore[union-attr]
    assert again.id == slow.id and again.evidence[0].fingerprint == "timeout"
    assert first.residual == 6


def test_a_rejected_plan_agent_answer_changes_nothing_but_the_journal(measured: Workspace) -> None:
    before = fix_plan_file.read(measured.fix_plan_json)
    result = cli("plan-loop", "once", "--workspace", str(measured.root), "--agent-command", agent("plan_prose.py"))
    assert result.returncode == 0
    after = fix_plan_file.read(measured.fix_plan_json)
    assert [i.id for i in after.items] == [i.id for i in before.items]  # type: ignore[union-attr]
    assert after.unmeasured == ("TK-6",)  # type: ignore[union-attr]
    assert after.agent_rejections and "not JSON" in after.agent_rejections[0]  # type: ignore[union-attr]
    with Journal(measured.journal_path("plan"), readonly=True) as journal:
        assert "not JSON" in journal.last("pass").data["agent_rejections"][0]  # type: ignore[union-attr]


def test_a_valid_plan_agent_answer_measures_the_unmeasured(measured: Workspace) -> None:
    result = cli("plan-loop", "once", "--workspace", str(measured.root), "--agent-command", agent("plan_judge.py"))
    assert result.returncode == 0, result.stderr
    plan = fix_plan_file.read(measured.fix_plan_json)
    assert plan.unmeasured == ()  # type: ignore[union-attr]
    tk6 = [i for i in plan.items if i.requirements == ("TK-6",)]  # type: ignore[union-attr]
    assert len(tk6) == 1 and tk6[0].evidence[0].check == "agent" and "no docstring" in tk6[0].evidence[0].excerpt


@pytest.mark.landlock
def test_plan_and_its_agent_cannot_write_code_or_canon(measured_landlock: Workspace, tmp_path: Path) -> None:
    marker = tmp_path / "escaped"
    result = cli("plan-loop", "once", "--workspace", str(measured_landlock.root), "--agent-command",
                 agent("plan_writes.py") + f" {marker}")
    assert result.returncode == 0, result.stderr
    assert not (measured_landlock.code / "textkit" / "evil.py").exists()
    assert not (measured_landlock.canon / "requirements" / "evil.md").exists()
    assert not marker.exists()


@pytest.mark.landlock
def test_checks_run_sandboxed_in_one_runner(measured_landlock: Workspace, tmp_path: Path) -> None:
    from spec_loop.draft import Draft
    from spec_loop.service import SpecService

    escape = tmp_path / "escaped-by-a-check"
    code_file = measured_landlock.code / "evil.py"
    doc = (f"## SB-1: a check that writes\npaths: sb.py\nchecks:\n  - echo x > {escape}; echo x > {code_file}; "
           "chmod -R u+w . ; echo x > planted.py; test ! -e planted.py && "
           "echo ok > $TMPDIR/scratch.txt && test -f $TMPDIR/scratch.txt\n\nWrites only where it may.\n")
    spec = SpecService(measured_landlock)
    with spec.locked():
        assert spec.decide(Draft("sb.md", "requirements/sb.md", doc.encode()), source="test").accepted
    spec.close()
    report = one_pass(measured_landlock, fresh=True)
    assert report.residual == 5  # SB-1 passes: it could write its scratch, not the tree it measures (even after chmod)...
    assert not escape.exists() and not code_file.exists()  # ...and nothing outside the pass
