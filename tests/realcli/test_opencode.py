"""opencode (opencode-ai), the real program, through a governed turn under Landlock.

The model is the SCRIPTED MODEL SERVER, reached the way opencode documents for any OpenAI-compatible endpoint: a
provider in ~/.config/opencode/opencode.json using @ai-sdk/openai-compatible with options.baseURL, and the key as
{env:NAME}. Only that config folder exists beforehand: opencode has never run on this account."""
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
    first_run_works,
    governed_turn,
    pinned,
    right_edit_is_kept,
    wrong_edit_is_rolled_back,
)

pytestmark = [pytest.mark.realcli, pytest.mark.landlock]
KEY = "test-key-opencode-123"
STATE = (".local/share/opencode/", ".local/state/opencode/", ".config/opencode/", ".cache/opencode/")


def _setup(ws: Workspace, server: ModelServer, *, first_run: bool = False) -> tuple[Path, dict[str, str]]:
    executable = pinned("opencode")
    config_dir = Path.home() / ".config" / "opencode"  # a fresh HOME per test
    config_dir.mkdir(parents=True)
    if not first_run:  # as opencode leaves HOME after its first run outside Banach
        for folder in (".local/share/opencode", ".local/state/opencode", ".cache/opencode"):
            (Path.home() / folder).mkdir(parents=True)
    provider = {"npm": "@ai-sdk/openai-compatible", "name": "scripted",
                "options": {"baseURL": server.url + "/v1", "apiKey": "{env:SCRIPTED_API_KEY}"},
                "models": {"scripted-model": {"name": "scripted-model"}}}
    (config_dir / "opencode.json").write_text(json.dumps({"provider": {"banach": provider}, "autoupdate": False,
                                                          "share": "disabled"}))
    configure(ws, "opencode", executable, "banach/scripted-model",
              ("SCRIPTED_API_KEY", "OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_AUTOUPDATE"))
    # no models.dev catalogue from the network (none here); no self-update mid-turn
    return executable, {"SCRIPTED_API_KEY": KEY, "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"}


def test_a_right_edit_is_kept_and_opencode_writes_nothing_else(measured_landlock: Workspace) -> None:
    right_edit_is_kept(measured_landlock, lambda server: _setup(measured_landlock, server), key=KEY, state=STATE,
                       name="opencode")


def test_a_wrong_edit_is_rolled_back(measured_landlock: Workspace) -> None:
    wrong_edit_is_rolled_back(measured_landlock, lambda server: _setup(measured_landlock, server), key=KEY)


def test_a_429_ends_the_turn_as_rate_limited_with_its_reset_time(measured_landlock: Workspace) -> None:
    # opencode retries a 429 without end and has no setting to stop (1.18.33): the turn ends on its budget (or, with
    # issue 12's gateway, when the gateway sees the limit). The preset's --print-logs puts each 429 on stderr.
    ws = measured_landlock
    with ModelServer(Script.of(RateLimit(retry_after=20), root=str(ws.code), api_key=KEY)) as server:
        executable, env = _setup(ws, server)
        turn = governed_turn(ws, env, turn_timeout=45)
    assert turn.decision == "rate_limited", (turn.record, turn.stdout, turn.stderr)
    assert turn.record["timed_out"]
    resets_at = turn.record["resets_at"]
    assert resets_at is not None and turn.started + 20 <= resets_at <= turn.started + turn.seconds + 21
    assert_no_survivors(cli_folder(executable), ws)


def test_a_first_run_on_the_account_works(measured_landlock: Workspace) -> None:
    first_run_works(measured_landlock, lambda server: _setup(measured_landlock, server, first_run=True), key=KEY)
