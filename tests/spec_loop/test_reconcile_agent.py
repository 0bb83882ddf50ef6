"""The optional reconcile agent: a valid answer can refuse a draft; an invalid one is ignored with the reason."""
from __future__ import annotations

from pathlib import Path

from canon.store import CanonStore
from shared.journal import Journal
from tests.helpers.workspaces import agent, cli, example

DRAFT = "## EX-1: slugs use underscores\npaths: textkit/underscore.py\n\nSlugs join words with '_'.\n"


def test_a_flagged_contradiction_refuses_the_draft(tmp_path: Path) -> None:
    ws = example(tmp_path)
    (ws.inbox / "extras.md").write_text(DRAFT)
    result = cli("spec-loop", "once", "--workspace", str(ws.root), "--reconcile-agent", agent("reconciler.py"))
    assert result.returncode == 1
    assert "extras.md:1: EX-1: the reconcile agent finds it contradicts TK-1 (requirements/textkit.md:" in result.stdout
    assert CanonStore(ws.canon).version() == 1


def test_prose_from_the_reconcile_agent_is_ignored_with_the_reason(tmp_path: Path) -> None:
    ws = example(tmp_path)
    (ws.inbox / "extras.md").write_text(DRAFT)
    result = cli("spec-loop", "once", "--workspace", str(ws.root), "--reconcile-agent", agent("plan_prose.py"))
    assert result.returncode == 0
    assert "answer is not JSON" in result.stdout and "deterministic checks stand" in result.stdout
    assert CanonStore(ws.canon).version() == 2
    with Journal(ws.journal_path("spec"), readonly=True) as journal:
        assert "not JSON" in journal.last("reconcile_agent.ignored").data["reason"]  # type: ignore[union-attr]
