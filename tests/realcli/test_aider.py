"""aider (aider-chat), the real program, through a governed turn under Landlock.

The model is the SCRIPTED MODEL SERVER, reached the way aider documents for any OpenAI-compatible endpoint:
OPENAI_API_BASE and OPENAI_API_KEY, and --model openai/NAME. Aider has no tool calls: for a model it does not know it
edits in its "whole" format (the file's path, then its full text in a fence), which the server writes."""
from __future__ import annotations

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
KEY = "test-key-aider-123"
STATE = (".aider/",)


def _setup(ws: Workspace, server: ModelServer, *, first_run: bool = False) -> tuple[Path, dict[str, str]]:
    executable = pinned("aider")
    if not first_run:  # as aider leaves HOME after its first run outside Banach
        (Path.home() / ".aider").mkdir()
    configure(ws, "aider", executable, "openai/scripted-model", ("OPENAI_API_KEY", "OPENAI_API_BASE"))
    return executable, {"OPENAI_API_KEY": KEY, "OPENAI_API_BASE": server.url + "/v1"}


def test_a_right_edit_is_kept_and_aider_writes_nothing_else(measured_landlock: Workspace) -> None:
    right_edit_is_kept(measured_landlock, lambda server: _setup(measured_landlock, server), key=KEY, state=STATE,
                       name="aider")


def test_a_wrong_edit_is_rolled_back(measured_landlock: Workspace) -> None:
    wrong_edit_is_rolled_back(measured_landlock, lambda server: _setup(measured_landlock, server), key=KEY)


def test_a_429_ends_the_turn_as_rate_limited_with_its_reset_time(measured_landlock: Workspace) -> None:
    # aider retries a RateLimitError itself (doubling from 0.125 s), and under it the OpenAI SDK honours each
    # retry-after: with a limit that stays, aider runs until the turn's budget. Its output carries the provider's
    # "Please try again in 20s", so the turn still reads as rate limited, with that reset.
    ws = measured_landlock
    with ModelServer(Script.of(RateLimit(retry_after=20), root=str(ws.code), api_key=KEY)) as server:
        executable, env = _setup(ws, server)
        turn = governed_turn(ws, env, turn_timeout=60)
    assert turn.decision == "rate_limited", (turn.record, turn.stdout, turn.stderr)
    assert turn.record["timed_out"]
    resets_at = turn.record["resets_at"]
    assert resets_at is not None and turn.started + 20 <= resets_at <= turn.started + turn.seconds + 21
    assert_no_survivors(cli_folder(executable), ws)


def test_a_first_run_on_the_account_works(measured_landlock: Workspace) -> None:
    first_run_works(measured_landlock, lambda server: _setup(measured_landlock, server, first_run=True), key=KEY)
