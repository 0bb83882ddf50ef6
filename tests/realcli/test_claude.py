"""Claude Code (@anthropic-ai/claude-code), the real program, through governed turns under Landlock.

Pointed at the SCRIPTED MODEL SERVER with `base_url` (ANTHROPIC_BASE_URL) and `api_key_env` (ANTHROPIC_API_KEY). As
root (CI) it runs only because the preset sets IS_SANDBOX=1; with a base_url its config folder is in the turn's
scratch, so it has never run on this account and writes nothing in HOME."""
from __future__ import annotations

import pytest

from shared.workspace import Workspace
from tests.realcli._cases import Cli, rate_limit_ends_the_turn, right_edit_is_kept, wrong_edit_is_rolled_back

pytestmark = [pytest.mark.realcli, pytest.mark.landlock]
CLAUDE = Cli("claude", "claude", "test-key-claude-123", "SCRIPTED_ANTHROPIC_KEY")


def test_a_right_edit_is_kept_and_claude_writes_nothing_else(measured_landlock: Workspace) -> None:
    right_edit_is_kept(measured_landlock, CLAUDE)


def test_a_wrong_edit_is_rolled_back(measured_landlock: Workspace) -> None:
    wrong_edit_is_rolled_back(measured_landlock, CLAUDE)


def test_a_429_ends_the_turn_as_rate_limited(measured_landlock: Workspace) -> None:
    # claude prints "API Error: Request rejected (429)" and its JSON api_error_status, not the provider's wait
    rate_limit_ends_the_turn(measured_landlock, CLAUDE, reset_printed=False)
