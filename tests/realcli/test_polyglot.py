"""A real CLI in a governed turn on the TypeScript project of tests/data (issue 45): Claude Code, through Banach's
gateway, under Landlock, writes change-case's upstream fix (#334) into change-case 5.4.2's src/keys.ts, and the turn
is kept because canon's `node --test` conformance tests (through the project's own tsx, from `npm ci`) pass per test
in the turn's sensors.
The model is the SCRIPTED MODEL SERVER, a labelled stand-in for the provider."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from shared.workspace import Workspace
from tests.helpers.model_server import ModelServer, Script, Write
from tests.helpers.polyglot import DATA, workspace
from tests.helpers.workspaces import cli as cli_run
from tests.realcli._governed import assert_no_survivors, cli_folder, governed_turn, head, pinned
from tests.realcli._routed import Routed, configure, model_calls

pytestmark = [pytest.mark.realcli, pytest.mark.landlock, pytest.mark.skipif(not shutil.which("node"), reason="needs node")]
CANARY = "sk-CANARY-gateway-provider-key-4545"
KEYS = DATA / "change-case-5.4.2" / "src" / "keys.ts"
FIX = {f"changeKeys({name}, depth - 1)": f"changeKeys({name}, depth - 1, options)" for name in ("item", "value")}


def test_claude_takes_a_governed_turn_on_the_typescript_project(tmp_path: Path) -> None:
    executable = pinned("claude")
    root, _ = workspace(tmp_path, "change-case", "right")
    ws = Workspace.open(root)
    # init's banach.toml also names claude through the real provider: give that rung a key it never uses
    assert cli_run("build-loop", "key", "set", "anthropic", "-w", str(root), input="sk-unused\n").returncode == 0
    assert cli_run("plan-loop", "once", "-w", str(root), timeout=600).returncode == 0  # build takes plan's items
    ws.config_file.write_text(ws.config_file.read_text().replace('agent = "scripted"', 'agent = "sim"'))
    right = KEYS.read_text()
    for unfixed, fixed in FIX.items():  # change-case#334, the upstream fix
        right = right.replace(unfixed, fixed)
    with ModelServer(Script.of(Write({"src/keys.ts": right}), root=str(ws.code), api_key=CANARY)) as server:
        configure(ws, Routed("claude", "anthropic"), str(executable), server)
        start = head(ws)
        turn = governed_turn(ws, {"SCRIPTED_KEY": CANARY}, turn_timeout=150)
        assert turn.decision == "keep", (turn.record, turn.stdout[-2000:], turn.stderr[-2000:])
    assert head(ws) != start and all(fixed in (ws.code / "src" / "keys.ts").read_text() for fixed in FIX.values())
    assert "tests/keys.test.ts" in turn.prompt  # the agent was told which conformance tests measure it
    failing_before = set(turn.record.get("failing_before", []))
    assert {f"canon:CK-1:tests::tests/keys.test.ts::{name}" for name in (
        "options reach the keys of objects inside arrays", "options reach the keys of nested objects")} <= failing_before
    assert not turn.record.get("failing_after"), turn.record  # every test of canon passes, by name
    calls = model_calls(ws, turn.record["n"])
    assert calls and all(call["status"] == 200 for call in calls), calls
    assert_no_survivors(cli_folder(executable), ws)
