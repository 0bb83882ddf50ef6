"""build-loop once --json: one JSON object with what the human line says, and the items blocked now."""
from __future__ import annotations

import json

from shared.workspace import Workspace
from tests.helpers.workspaces import agent, cli


def once(ws: Workspace, *args: str) -> dict:  # type: ignore[type-arg]
    result = cli("build-loop", "once", "--json", "--workspace", str(ws.root), *args)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout  # one object, nothing else on stdout
    return json.loads(lines[0])  # type: ignore[no-any-return]


def test_a_kept_turn_says_its_decision_item_iteration_and_commit(measured: Workspace) -> None:
    human = cli("build-loop", "once", "--workspace", str(measured.root), "--agent-command", agent("no_change.py"))
    assert human.returncode == 0 and human.stdout.startswith("iteration 1 (TK-1."), human.stdout  # unchanged without --json
    answer = once(measured, "--agent-command", agent("good.py"))
    assert answer["decision"] == "keep" and answer["iteration"] == 2 and answer["item"].startswith("TK-1.")
    assert answer["commit"] and len(answer["commit"]) == 40
    assert answer["message"].startswith(f"iteration 2 ({answer['item']}): keep: ")
    assert answer["reason"].startswith("failing ") and answer["cost_usd"] is None
    assert answer["canon_version"] == 1 and answer["blocked"] == [] and answer["unblock_hint"] == ""


def test_blocked_items_are_named_with_their_evidence_and_what_to_do(measured: Workspace) -> None:
    text = measured.config_file.read_text().replace("max_attempts = 4", "max_attempts = 1")
    measured.config_file.write_text(text)
    failed = once(measured, "--agent-command", agent("no_change.py"))
    assert failed["decision"] == "stall" and failed["commit"] is None
    assert [block["item"] for block in failed["blocked"]] == [failed["item"]]  # one attempt was its whole budget
    assert failed["blocked"][0]["explanation"].startswith(f"TK-1 (item {failed['item']}): blocked after 1 turn in 1 round "
                                                          "(no attempt of that round changed anything")
    assert "(build-loop report 1)" in failed["blocked"][0]["explanation"]
    assert failed["blocked"][0]["requirement"] == "TK-1" and failed["blocked"][0]["spent"] == "1 turn in 1 round"
    assert "No module named 'textkit.slug'" in failed["blocked"][0]["cause"] and not failed["blocked"][0]["rounds_left"]
    assert "build-loop unblock" in failed["unblock_hint"]
