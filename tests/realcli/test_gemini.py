"""Gemini CLI (@google/gemini-cli), the real program, through governed turns under Landlock.

Pointed at the SCRIPTED MODEL SERVER with `base_url` (GOOGLE_GEMINI_BASE_URL) and `api_key_env` (GEMINI_API_KEY).
In a folder it does not trust, headless gemini turns --yolo off and exits 55: the preset trusts the work tree
(GEMINI_CLI_TRUST_WORKSPACE). With a base_url its home (GEMINI_CLI_HOME) is in the turn's scratch, so gemini has never
run on this account and writes nothing in HOME. The prompt goes on stdin only."""
from __future__ import annotations

import pytest

from shared.workspace import Workspace
from tests.realcli._cases import Cli, rate_limit_ends_the_turn, right_edit_is_kept, wrong_edit_is_rolled_back

pytestmark = [pytest.mark.realcli, pytest.mark.landlock]
GEMINI = Cli("gemini", "gemini", "test-key-gemini-123", "SCRIPTED_GEMINI_KEY")


def test_a_right_edit_is_kept_and_gemini_writes_nothing_else(measured_landlock: Workspace) -> None:
    right_edit_is_kept(measured_landlock, GEMINI)


def test_a_wrong_edit_is_rolled_back(measured_landlock: Workspace) -> None:
    wrong_edit_is_rolled_back(measured_landlock, GEMINI)


def test_a_429_ends_the_turn_as_rate_limited_with_its_reset_time(measured_landlock: Workspace) -> None:
    # gemini prints Google's message, "... Please retry in 20s."
    rate_limit_ends_the_turn(measured_landlock, GEMINI, reset_printed=True)
