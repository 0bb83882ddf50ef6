"""Codex CLI (@openai/codex), the real program, through governed turns under Landlock.

Pointed at the SCRIPTED MODEL SERVER with `base_url` (a model provider of its own, given with `-c`, wire_api
"responses") and `api_key_env` (the provider's env_key). Its own bubblewrap sandbox cannot start inside Landlock:
the preset turns it off (--dangerously-bypass-approvals-and-sandbox). With a base_url CODEX_HOME is in the turn's
scratch, so codex has never run on this account and writes nothing in HOME."""
from __future__ import annotations

import pytest

from shared.workspace import Workspace
from tests.realcli._cases import Cli, rate_limit_ends_the_turn, right_edit_is_kept, wrong_edit_is_rolled_back

pytestmark = [pytest.mark.realcli, pytest.mark.landlock]
CODEX = Cli("codex", "codex", "test-key-codex-123", "SCRIPTED_OPENAI_KEY", base_path="/v1")


def test_a_right_edit_is_kept_and_codex_writes_nothing_else(measured_landlock: Workspace) -> None:
    right_edit_is_kept(measured_landlock, CODEX)


def test_a_wrong_edit_is_rolled_back(measured_landlock: Workspace) -> None:
    wrong_edit_is_rolled_back(measured_landlock, CODEX)


def test_a_429_ends_the_turn_as_rate_limited(measured_landlock: Workspace) -> None:
    # codex prints "exceeded retry limit, last status: 429 Too Many Requests", not the provider's wait
    rate_limit_ends_the_turn(measured_landlock, CODEX, reset_printed=False)
