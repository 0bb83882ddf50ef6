"""Each agent preset as a subprocess contract: a fake executable of that name on PATH records argv,
stdin, cwd and environment, and answers the way the real CLI does. No preset needs the network."""
from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import OPEN, cli

FAKE = """#!{python}
import json, os, sys
record = {{"argv": sys.argv[1:], "stdin": sys.stdin.read(), "cwd": os.getcwd(), "env": dict(os.environ)}}
for flag in ("--message-file", "-i"):
    if flag in sys.argv:
        record["prompt_file_text"] = open(sys.argv[sys.argv.index(flag) + 1]).read()
with open({record!r}, "w") as handle:
    json.dump(record, handle)
if {name!r} == "claude":
    print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "done", "total_cost_usd": 0.0123}}))
else:
    print("done")
"""

# preset -> (argv before the prompt, where the prompt goes)
CONTRACTS = {
    "claude": (["-p", "--output-format", "json", "--dangerously-skip-permissions", "--model", "M"], "stdin"),
    "codex": (["exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", "--ephemeral", "--model", "M", "-"],
              "stdin"),
    "aider": (["--yes-always", "--no-git", "--no-stream", "--no-pretty", "--no-fancy-input", "--no-check-update",
               "--no-show-release-notes", "--no-show-model-warnings", "--no-analytics", "--no-suggest-shell-commands",
               "--no-detect-urls", "--model", "M", "--message-file"], "file"),
    "gemini": (["--yolo", "--output-format", "json", "--model", "M"], "stdin"),
    "opencode": (["run", "--title", "banach", "--print-logs", "--log-level", "ERROR", "--model", "M"], "stdin"),
    "qwen": (["--yolo", "--auth-type", "openai", "--output-format", "json", "--model", "M"], "stdin"),
    "pi": (["-p", "--no-session", "--offline", "--model", "M"], "stdin"),
}


def install_fake(bin_dir: Path, name: str, record: Path) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(FAKE.format(python=sys.executable, record=str(record), name=name))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize("preset", sorted(CONTRACTS))
def test_preset_contract(measured: Workspace, tmp_path: Path, preset: str) -> None:
    record = tmp_path / "record.json"
    install_fake(tmp_path / "bin", preset, record)
    model = 'model = "M"\n'
    text = measured.config_file.read_text().replace('agent = "sim"', 'agent = "real"')
    measured.config_file.write_text(text + f'\n[agents.real]\npreset = "{preset}"\n{model}\n' + OPEN)
    env = {"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "OPERATOR_SECRET": "s3cret"}
    result = cli("build-loop", "once", "--workspace", str(measured.root), env=env)
    assert result.returncode == 0, result.stderr
    seen = json.loads(record.read_text())
    flags, mode = CONTRACTS[preset]
    prompt = (measured.role_dir("build") / "iterations" / "1" / "prompt.md").read_text()
    assert "Banach-Item: TK-1." in prompt
    if mode == "arg":
        assert seen["argv"] == [*flags, prompt]
    elif mode == "file":
        assert seen["argv"][:-1] == flags and seen["prompt_file_text"] == prompt
    else:
        assert seen["argv"] == flags
    assert seen["stdin"] == prompt  # every agent also gets the prompt on stdin...
    assert Path(seen["env"]["BANACH_PROMPT_FILE"]).read_text() == prompt  # ...and in a file
    assert seen["cwd"] == str(measured.code)
    assert "OPERATOR_SECRET" not in seen["env"]
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        ended = journal.last("iteration.ended")
    assert ended is not None and ended.data["decision"] == "stall"  # the fake changed nothing
    if preset == "claude":
        assert ended.data["cost_usd"] == pytest.approx(0.0123)
    if preset == "aider":  # its history files go to the turn's scratch, not into the work tree
        assert Path(seen["env"]["AIDER_CHAT_HISTORY_FILE"]).parent == Path(seen["env"]["TMPDIR"])


def test_secrets_named_in_config_do_reach_the_agent(measured: Workspace, tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    install_fake(tmp_path / "bin", "claude", record)
    text = measured.config_file.read_text().replace('agent = "sim"', 'agent = "real"\nenv_allow = ["PATH", "ANTHROPIC_API_KEY"]')
    measured.config_file.write_text(text + '\n[agents.real]\npreset = "claude"\n' + OPEN)
    env = {"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "ANTHROPIC_API_KEY": "k", "OTHER_SECRET": "x"}
    assert cli("build-loop", "once", "--workspace", str(measured.root), env=env).returncode == 0
    seen = json.loads(record.read_text())["env"]
    assert seen["ANTHROPIC_API_KEY"] == "k" and "OTHER_SECRET" not in seen and "HOME" not in seen


STATEFUL_FAKE = """#!{python}
import json, os, sys
sys.stdin.read()
home = os.environ["HOME"]
results = {{}}
for name in (".claude/session.json", ".claude.json", "elsewhere.txt"):
    try:
        with open(os.path.join(home, name), "a") as handle:
            handle.write("x")
        results[name] = "written"
    except OSError as exc:
        results[name] = exc.strerror
results["CLAUDE_CONFIG_DIR"] = os.environ.get("CLAUDE_CONFIG_DIR")
with open(os.path.join(home, ".claude", "record.json"), "w") as handle:
    json.dump(results, handle)
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "done"}}))
"""


@pytest.mark.landlock
@pytest.mark.parametrize("reach", ["machine", "turn"])
def test_a_cli_may_write_its_own_state_and_nothing_else_in_home(measured_landlock: Workspace, tmp_path: Path,
                                                                reach: str) -> None:
    # A real CLI keeps its login and sessions in HOME and stops when it cannot write there. It has never run on this
    # account: ~/.claude does not exist yet, and build creates it. claude's ~/.claude.json (replaced by a rename in
    # HOME, which no grant of the file allows) moves into it through CLAUDE_CONFIG_DIR.
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text("{}")
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text(STATEFUL_FAKE.format(python=sys.executable))
    fake.chmod(0o755)  # a turn started by root runs as uid 65534 in its view
    ws = measured_landlock
    text = ws.config_file.read_text().replace('agent = "sim"', 'agent = "real"')
    text = text.replace('backend = "landlock"', f'backend = "landlock"\nreach = "{reach}"')
    ws.config_file.write_text(text + '\n[agents.real]\npreset = "claude"\n' + OPEN)
    env = {"PATH": f"{fake.parent}:{os.environ['PATH']}", "HOME": str(home)}
    result = cli("build-loop", "-v", "once", "--workspace", str(ws.root), env=env)  # -v: the isolation line
    assert result.returncode == 0, result.stderr
    assert f"the agent CLIs' own state: {home / '.claude'}\n" in result.stderr or \
        f"the agent CLIs' own state: {home / '.claude'};" in result.stderr, result.stderr
    seen = json.loads((home / ".claude" / "record.json").read_text())
    # In its view the turn's HOME is a fresh folder, whose files are thrown away with it; with the machine's reach,
    # Landlock refuses them.
    elsewhere = "written" if reach == "turn" else "Permission denied"
    assert seen == {".claude/session.json": "written", ".claude.json": elsewhere, "elsewhere.txt": elsewhere,
                    "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    assert (home / ".claude" / "session.json").read_text() == "x"
    assert (home / ".claude.json").read_text() == "{}" and not (home / "elsewhere.txt").exists()


def test_state_paths_must_not_be_relative(measured: Workspace) -> None:
    text = measured.config_file.read_text()
    measured.config_file.write_text(text + '\n[agents.real]\npreset = "codex"\nstate_paths = ["codex-state"]\n' + OPEN)
    result = cli("build-loop", "once", "--workspace", str(measured.root))
    assert result.returncode == 1
    assert "agents.real.state_paths" in result.stderr and "'codex-state' must start with ~, $VAR or /" in result.stderr
