"""Provider keys as a person handles them: `build-loop key set` stores one where only build reads it, `banach doctor`
says where each provider's key is and warns about one exported in the shell, and a mistyped provider is named."""
from __future__ import annotations

import os
from pathlib import Path

from shared.workspace import Workspace
from tests.helpers.workspaces import cli, example

PROVIDER = ('\n[gateway.providers.anthropic]\nwire = "anthropic"\nbase_url = "https://api.anthropic.com"\n'
            'key_env = "BANACH_TEST_ANTHROPIC_KEY"\n')


def test_key_set_stores_the_key_0600_and_doctor_reports_it(tmp_path: Path) -> None:
    ws = example(tmp_path, extra=PROVIDER)
    before = cli("banach", "doctor", "--workspace", str(ws.root))
    assert "gateway provider anthropic: no key" in before.stdout, before.stdout
    stored = cli("build-loop", "key", "set", "anthropic", "--workspace", str(ws.root), input="sk-ant-test-123\n")
    assert stored.returncode == 0, stored.stderr
    path = ws.keys_dir / "providers" / "anthropic"
    assert path.read_text() == "sk-ant-test-123\n" and path.stat().st_mode & 0o777 == 0o600
    after = cli("banach", "doctor", "--workspace", str(ws.root))
    assert "gateway provider anthropic: key in state/keys/providers/anthropic" in after.stdout, after.stdout
    exported = cli("banach", "doctor", "--workspace", str(ws.root), env={"BANACH_TEST_ANTHROPIC_KEY": "sk-x"})
    assert "$BANACH_TEST_ANTHROPIC_KEY is set in this shell" in exported.stdout, exported.stdout


def test_a_key_for_an_unknown_provider_or_a_blank_key_is_refused(tmp_path: Path) -> None:
    ws = example(tmp_path, extra=PROVIDER)
    unknown = cli("build-loop", "key", "set", "antropic", "--workspace", str(ws.root), input="sk-1\n")
    assert unknown.returncode != 0 and "no [gateway.providers.antropic]" in unknown.stderr
    blank = cli("build-loop", "key", "set", "anthropic", "--workspace", str(ws.root), input="\n")
    assert blank.returncode != 0 and "empty" in blank.stderr
    assert not (ws.keys_dir / "providers" / "anthropic").exists()


def test_an_agent_naming_a_provider_that_does_not_exist_is_refused_by_name(tmp_path: Path) -> None:
    ws = example(tmp_path, extra=PROVIDER)
    ws.config_file.write_text(ws.config_file.read_text() + '\n[agents.c]\npreset = "claude"\nprovider = "antropic"\n')
    result = cli("build-loop", "once", "--workspace", str(ws.root))
    assert result.returncode != 0
    assert "agents.c.provider names 'antropic'" in result.stderr and "defined: anthropic" in result.stderr
    assert "Value error" not in result.stderr


def test_without_a_key_build_loop_says_where_to_put_it(tmp_path: Path) -> None:
    ws = example(tmp_path, extra=PROVIDER + '\n[agents.c]\npreset = "claude"\nprovider = "anthropic"\n')
    text = ws.config_file.read_text().replace('agent = "sim"', 'agent = "c"')
    ws.config_file.write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "BANACH_TEST_ANTHROPIC_KEY"}
    result = cli("build-loop", "once", "--workspace", str(Workspace.open(ws.root).root), env=env)
    assert result.returncode != 0
    assert "build-loop key set anthropic" in result.stderr, result.stderr
