"""pi (@mariozechner/pi-coding-agent), the real program, through a governed turn under Landlock.

The model is the SCRIPTED MODEL SERVER, reached the way pi documents for any OpenAI-compatible endpoint: a provider
in ~/.pi/agent/models.json with baseUrl, api "openai-completions" and apiKey naming an environment variable."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared.workspace import Workspace
from tests.helpers.model_server import ModelServer, RateLimit, Script
from tests.realcli._governed import (
    assert_no_survivors,
    cli_folder,
    configure,
    governed_turn,
    pinned,
    right_edit_is_kept,
    wrong_edit_is_rolled_back,
)

pytestmark = [pytest.mark.realcli, pytest.mark.landlock]
KEY = "test-key-pi-123"
STATE = (".pi/",)


def _setup(ws: Workspace, server: ModelServer, *, settings: dict[str, object] | None = None) -> tuple[Path, dict[str, str]]:
    executable = pinned("pi")
    home = Path.home()  # a fresh HOME per test: pi has never run on this account
    agent_dir = home / ".pi" / "agent"
    agent_dir.mkdir(parents=True)
    provider = {"baseUrl": server.url + "/v1", "api": "openai-completions", "apiKey": "SCRIPTED_API_KEY",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": "scripted-model"}]}
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"banach": provider}}))
    if settings is not None:
        (agent_dir / "settings.json").write_text(json.dumps(settings))
    configure(ws, "pi", executable, "banach/scripted-model", ("SCRIPTED_API_KEY",))
    return executable, {"SCRIPTED_API_KEY": KEY}


def test_a_right_edit_is_kept_and_pi_writes_nothing_else(measured_landlock: Workspace) -> None:
    right_edit_is_kept(measured_landlock, lambda server: _setup(measured_landlock, server), key=KEY, state=STATE,
                       name="pi")


def test_a_wrong_edit_is_rolled_back(measured_landlock: Workspace) -> None:
    wrong_edit_is_rolled_back(measured_landlock, lambda server: _setup(measured_landlock, server), key=KEY)


def test_a_429_ends_the_turn_as_rate_limited_with_its_reset_time(measured_landlock: Workspace) -> None:
    # pi retries a 429 itself (3 times, and its SDK 2 more each, honouring retry-after): with those defaults a limit
    # costs minutes. Turning its retries off is the person's setting, in pi's own settings file.
    ws = measured_landlock
    with ModelServer(Script.of(RateLimit(retry_after=20), root=str(ws.code), api_key=KEY)) as server:
        executable, env = _setup(ws, server, settings={"retry": {"enabled": False, "provider": {"maxRetries": 0}}})
        turn = governed_turn(ws, env, turn_timeout=120)
    assert turn.decision == "rate_limited", (turn.record, turn.stdout, turn.stderr)
    assert turn.record["exit_code"] != 0 and not turn.record["timed_out"]
    resets_at = turn.record["resets_at"]
    assert resets_at is not None and turn.started + 20 <= resets_at <= turn.started + turn.seconds + 21
    assert_no_survivors(cli_folder(executable), ws)
