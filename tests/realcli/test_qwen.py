"""Qwen Code (@qwen-code/qwen-code), the real program, driven as the `command` preset through governed turns under
Landlock.

The working agents entry (docs/agents.md): the prompt on stdin (no positional prompt: it would be sent twice),
--yolo (Banach is the sandbox), its OpenAI-compatible auth pointed at the SCRIPTED MODEL SERVER, the key in
OPENAI_API_KEY through api_key_env, and ~/.qwen as its state folder, which build creates on a first run."""
from __future__ import annotations

import pytest

from shared.workspace import Workspace
from tests.realcli._cases import MODEL, Cli, right_edit_is_kept, wrong_edit_is_rolled_back

pytestmark = [pytest.mark.realcli, pytest.mark.landlock]
QWEN = Cli("qwen", "command", "test-key-qwen-123", "OPENAI_API_KEY", base_path="/v1", state=(".qwen/",),
           command=f"{{exe}} --yolo --auth-type openai --openai-base-url {{url}} --model {MODEL} --output-format json",
           extra='state_paths = ["~/.qwen"]\nenv = { QWEN_CODE_SUPPRESS_YOLO_WARNING = "1" }\n')


def test_a_right_edit_is_kept_and_qwen_writes_nothing_else(measured_landlock: Workspace) -> None:
    right_edit_is_kept(measured_landlock, QWEN)


def test_a_wrong_edit_is_rolled_back(measured_landlock: Workspace) -> None:
    wrong_edit_is_rolled_back(measured_landlock, QWEN)
