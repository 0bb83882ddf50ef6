"""Every real CLI through Banach's model gateway, in a governed turn under Landlock: the CLI holds only its turn's
token, the gateway holds the provider's key (a canary the SCRIPTED MODEL SERVER, a labelled stand-in for the
provider, insists on), and the journal has each call with its tokens and cost. banach.toml names only the preset, the
model and the provider: Banach writes whatever the CLI needs to find the gateway (base URL, provider config), so a CLI
that never ran on the account works the same."""
from __future__ import annotations

from pathlib import Path

import pytest

from shared.workspace import Workspace
from tests.helpers.model_server import ModelServer, RateLimit, Script, Write
from tests.helpers.workspaces import cli as cli_run
from tests.realcli._governed import (
    ITEM_FILE,
    assert_no_survivors,
    assert_prompt_once,
    cli_folder,
    files,
    governed_turn,
    head,
    outside_writes,
    pinned,
    reference,
)
from tests.realcli._routed import MODEL, Routed, configure, model_calls

pytestmark = [pytest.mark.realcli, pytest.mark.landlock]
CANARY = "sk-CANARY-gateway-provider-key-5150"


CLIS = [Routed("claude", "anthropic"), Routed("codex", "openai"), Routed("gemini", "gemini"),
        Routed("qwen", "openai", (".qwen/",)), Routed("opencode", "openai"), Routed("pi", "openai"),
        Routed("aider", "openai", (".aider/",)), Routed("pi-anthropic", "anthropic")]


@pytest.mark.parametrize("cli", CLIS, ids=[c.name for c in CLIS])
def test_a_turn_through_the_gateway_is_kept_and_every_call_is_on_the_record(measured_landlock: Workspace,
                                                                             cli: Routed) -> None:
    ws = measured_landlock
    executable = pinned(cli.preset)
    with ModelServer(Script.of(Write({ITEM_FILE: reference("right")}), root=str(ws.code), api_key=CANARY)) as server:
        configure(ws, cli, str(executable), server)
        before_ws, before_home, start = files(ws.root), files(Path.home()), head(ws)
        turn = governed_turn(ws, {"SCRIPTED_KEY": CANARY}, turn_timeout=150)
        assert turn.decision == "keep", (turn.record, turn.stdout[-2000:], turn.stderr[-2000:])
        assert head(ws) != start
        assert_prompt_once(server, turn)
        assert server.model_requests and all(r.api_key == CANARY for r in server.model_requests)
    calls = model_calls(ws, turn.record["n"])
    assert calls and all(c["status"] == 200 and c["model"] == MODEL for c in calls), calls
    assert all(c["input_tokens"] > 0 and c["output_tokens"] > 0 and c["cost_usd"] > 0 for c in calls), calls
    assert turn.record["model_calls"] == len(calls) == len(server.model_requests)
    assert turn.record["cost_usd"] == pytest.approx(sum(c["cost_usd"] for c in calls))
    assert outside_writes(ws, Path.home(), before_ws, before_home, cli.state) == set()
    assert_no_survivors(cli_folder(executable), ws)
    replay = cli_run("build-loop", "report", str(turn.record["n"]), "--transcript", "--workspace", str(ws.root))
    marker = next(line for line in turn.prompt.splitlines() if line.startswith("Requirements:"))
    assert marker in replay.stdout and "SCRIPTED MODEL SERVER" in replay.stdout  # asked, and answered
    print(f"{cli.name} through the gateway: {len(calls)} calls, {turn.record['tokens']} tokens, "
          f"${turn.record['cost_usd']:.4f}, turn {turn.record['duration']} s")


@pytest.mark.parametrize("cli", CLIS[:-1], ids=[c.name for c in CLIS[:-1]])
def test_a_429_ends_the_turn_at_once_with_the_providers_reset(measured_landlock: Workspace, cli: Routed) -> None:
    """Whatever the CLI would do with a 429 (qwen and opencode retry without end; claude, codex and gemini print no
    reset time), the gateway ends the turn at the first one, with the reset the provider's headers gave."""
    ws = measured_landlock
    executable = pinned(cli.preset)
    with ModelServer(Script.of(RateLimit(retry_after=20), root=str(ws.code), api_key=CANARY)) as server:
        configure(ws, cli, str(executable), server)
        turn = governed_turn(ws, {"SCRIPTED_KEY": CANARY}, turn_timeout=150)
    assert turn.decision == "rate_limited", (turn.record, turn.stdout[-2000:], turn.stderr[-2000:])
    assert turn.record["gateway_stop"] == "rate_limited" and turn.record["duration"] < 60, turn.record
    resets_at = turn.record["resets_at"]
    assert resets_at is not None and turn.started + 19 <= resets_at <= turn.started + turn.seconds + 21
    assert_no_survivors(cli_folder(executable), ws)


@pytest.mark.parametrize("cli", [CLIS[0], CLIS[1], CLIS[4]], ids=["claude", "codex", "opencode"])
def test_under_gateway_only_network_the_cli_still_works(measured_landlock: Workspace, cli: Routed) -> None:
    """network = "gateway-only": the CLI's turn runs in a network namespace whose one way out is the gateway (no
    update check, telemetry or model catalogue can go anywhere), and it still completes its turn."""
    ws = measured_landlock
    executable = pinned(cli.name)
    with ModelServer(Script.of(Write({ITEM_FILE: reference("right")}), root=str(ws.code), api_key=CANARY)) as server:
        configure(ws, cli, str(executable), server)
        text = ws.config_file.read_text()
        only = '[gateway]\nnetwork = "gateway-only"\n\n[gateway.providers.scripted]'
        ws.config_file.write_text(text.replace("[gateway.providers.scripted]", only))
        turn = governed_turn(ws, {"SCRIPTED_KEY": CANARY}, turn_timeout=150)
    assert turn.decision == "keep", (turn.record, turn.stdout[-2000:], turn.stderr[-2000:])
    assert model_calls(ws, turn.record["n"])
    assert_no_survivors(cli_folder(executable), ws)
