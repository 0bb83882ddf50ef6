"""Qwen Code (@qwen-code/qwen-code), the real program, through governed turns under Landlock, with the `qwen` preset
talking to the SCRIPTED MODEL SERVER directly (base_url -> --openai-base-url, api_key_env -> OPENAI_API_KEY); through
the gateway it is in tests/realcli/test_gateway.py.

The prompt goes on stdin (no positional prompt: it would be sent twice), --yolo (Banach is the sandbox), and ~/.qwen
is its state folder, which build creates on a first run."""
from __future__ import annotations

import pytest

from shared.workspace import Workspace
from tests.realcli._cases import Cli, right_edit_is_kept, wrong_edit_is_rolled_back

pytestmark = [pytest.mark.realcli, pytest.mark.landlock]
QWEN = Cli("qwen", "qwen", "test-key-qwen-123", "SCRIPTED_OPENAI_KEY", base_path="/v1", state=(".qwen/",))


def test_a_right_edit_is_kept_and_qwen_writes_nothing_else(measured_landlock: Workspace) -> None:
    right_edit_is_kept(measured_landlock, QWEN)


def test_a_wrong_edit_is_rolled_back(measured_landlock: Workspace) -> None:
    wrong_edit_is_rolled_back(measured_landlock, QWEN)
