"""A real CLI in a governed turn on the TypeScript project of tests/data (issue 45): Claude Code, through Banach's
gateway, under Landlock, writes kebabCase into wordcase's src/index.ts, and the turn is kept because canon's
`node --test` conformance tests (through the project's own tsx, from `npm ci`) pass per test in the turn's sensors.
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
KEBAB = '\n/** "hello big world" -> "hello-big-world" */\nexport function kebabCase(text: string): string {\n' \
        '  return words(text).map((word) => word.toLowerCase()).join("-");\n}\n'


def test_claude_takes_a_governed_turn_on_the_typescript_project(tmp_path: Path) -> None:
    executable = pinned("claude")
    root, _ = workspace(tmp_path, "wordcase-ts", "right")
    ws = Workspace.open(root)
    # init's banach.toml also names claude through the real provider: give that rung a key it never uses
    assert cli_run("build-loop", "key", "set", "anthropic", "-w", str(root), input="sk-unused\n").returncode == 0
    assert cli_run("plan-loop", "once", "-w", str(root), timeout=600).returncode == 0  # build takes plan's items
    ws.config_file.write_text(ws.config_file.read_text().replace('agent = "scripted"', 'agent = "sim"'))
    right = (DATA / "wordcase-ts" / "src" / "index.ts").read_text() + KEBAB
    with ModelServer(Script.of(Write({"src/index.ts": right}), root=str(ws.code), api_key=CANARY)) as server:
        configure(ws, Routed("claude", "anthropic"), str(executable), server)
        start = head(ws)
        turn = governed_turn(ws, {"SCRIPTED_KEY": CANARY}, turn_timeout=150)
        assert turn.decision == "keep", (turn.record, turn.stdout[-2000:], turn.stderr[-2000:])
    assert head(ws) != start and "kebabCase" in (ws.code / "src" / "index.ts").read_text()
    assert "tests/kebab.test.ts" in turn.prompt  # the agent was told which conformance tests measure it
    failing_before = set(turn.record.get("failing_before", []))
    assert {f"canon:WC-1:tests::tests/kebab.test.ts::{name}" for name in (
        "kebabCase joins lower-cased words with dashes", "kebabCase splits where the case changes")} <= failing_before
    assert not turn.record.get("failing_after"), turn.record  # every test of canon passes, by name
    calls = model_calls(ws, turn.record["n"])
    assert calls and all(call["status"] == 200 for call in calls), calls
    assert_no_survivors(cli_folder(executable), ws)
