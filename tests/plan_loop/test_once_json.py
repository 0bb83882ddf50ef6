"""plan-loop once --json: one JSON object with the pass number, canon version, code commit, residual, certificate
and items; without --json the human lines are as before."""
from __future__ import annotations

import json
from pathlib import Path

from shared.workspace import Workspace
from tests.helpers.workspaces import cli, custom, git


def test_a_pass_with_open_items_in_json(measured: Workspace) -> None:
    result = cli("plan-loop", "once", "--json", "--workspace", str(measured.root))
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["pass"] == 2 and answer["canon_version"] == 1 and len(answer["code_commit"]) == 40
    assert answer["residual"] == 5 and answer["certified"] is False
    assert [item["requirements"] for item in answer["items"]] == [["TK-1"], ["TK-2"], ["TK-3"], ["TK-5"], ["TK-4"]]
    assert all(item["id"].startswith(item["requirements"][0] + ".") and item["title"] for item in answer["items"])
    assert answer["message"].startswith("plan pass 2: canon v1 x code ") and len(answer["passes"]) == 1


def test_a_certified_pass_in_json_and_in_words(tmp_path: Path) -> None:
    ws = custom(tmp_path, "## ST-1: file 1 exists\npaths: file1.txt\nchecks:\n  - test -f file1.txt\n\nIt exists.\n",
                "partial.py")
    assert json.loads(cli("plan-loop", "once", "--json", "--workspace", str(ws.root)).stdout)["residual"] == 1
    assert cli("build-loop", "once", "--workspace", str(ws.root)).returncode == 0  # partial.py writes file1.txt
    result = cli("plan-loop", "once", "--json", "--workspace", str(ws.root))
    answer = json.loads(result.stdout)
    assert answer["certified"] is True and answer["residual"] == 0 and answer["items"] == []
    assert [p["pass"] for p in answer["passes"]] == [2, 3] and answer["pass"] == 3  # the pass, then the fresh one
    assert answer["passes"][0]["certified"] is False and answer["passes"][1]["fresh"] is True
    assert answer["code_commit"] == git(ws.code, "rev-parse", "HEAD")
    human = cli("plan-loop", "once", "--workspace", str(ws.root))
    assert human.stdout.startswith("plan pass 4: canon v1 x code ") and "CERTIFIED" in human.stdout
