"""Issue 40: every run of agent-written code in a view of its own. The code a turn wrote is run again by build's
sensors and plan's checks; there it once read another workspace's plan key and held-back tests, failed with both in
its assertion message, and the next prompt, the journal and the iteration's record carried them. Now each such run
sees only its own folder, the code read-only, its environment and toolchains: the same code finds neither, and
nothing it prints carries them. The control runs the same code with isolation.reach = 'machine' (runs read the
machine, every start-up line says so), where it reaches both.

The reach probe (tests/helpers/agents/hostile/reach.py) run as a sensor and as a plan check finds nothing either."""
from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path

import pytest

from shared.journal import load_or_create_key
from shared.workspace import Workspace
from tests.helpers.isolation import view_unavailable
from tests.helpers.workspaces import HELPERS, cli, example, git, land

READER = HELPERS / "agents" / "hostile" / "reads_the_machine.py"
pytestmark = [pytest.mark.landlock,
              pytest.mark.skipif(bool(view_unavailable()), reason=f"no views here: {view_unavailable()}")]


def _other_workspace(tmp_path: Path) -> tuple[Workspace, str, list[str]]:
    """Another workspace on the machine, with a plan key and a held-back test, each holding a canary."""
    other = example(tmp_path / "other", backend="landlock")
    canary = f"canary-{secrets.token_hex(8)}"
    key = other.keys_dir / "plan.key"
    load_or_create_key(key)
    key.write_text(f"{canary}-key\n")
    held = other.canon / "held_back" / "tests" / "test_secret.py"
    held.parent.mkdir(parents=True)
    held.write_text(f"def test_secret():\n    assert 1 == 1  # {canary}-held-back\n")
    return other, canary, [str(key), str(held)]


def _everything_written(ws: Workspace) -> str:
    """Every byte build and plan keep: prompts, outputs, records, fix_plan, the journals (SQLite, read raw)."""
    found = []
    for path in sorted([*ws.state.rglob("*"), *ws.plan_dir.rglob("*")]):
        if path.is_file() and not path.is_symlink():
            found.append(path.read_bytes().decode("latin-1"))
    return "\n".join(found)


@pytest.mark.parametrize("reach", ["turn", "machine"])
def test_a_sensor_cannot_carry_another_workspaces_key_or_held_back_test_back(tmp_path: Path, reach: str) -> None:
    _, canary, targets = _other_workspace(tmp_path)
    ws = example(tmp_path / "ws", backend="landlock")
    if reach == "machine":
        ws.config_file.write_text(ws.config_file.read_text().replace("[isolation]\n", '[isolation]\nreach = "machine"\n'))
    agent = f"{sys.executable} {READER} {' '.join(targets)}"
    assert cli("plan-loop", "once", "-w", str(ws.root)).returncode == 0
    for _ in range(2):  # the second turn's prompt carries the first one's feedback
        done = cli("build-loop", "once", "-w", str(ws.root), "--agent-command", agent)
        assert done.returncode == 0, done.stderr
    assert cli("plan-loop", "once", "-w", str(ws.root)).returncode == 0
    written = _everything_written(ws)
    assert "what this run could reach" in written  # the control that the code ran where its output is kept
    if reach == "machine":  # the control: outside a view the same code reads both, and they travel back
        assert f"{canary}-key" in written and f"{canary}-held-back" in written
        return
    assert canary not in written
    assert "UNREAD " + targets[0] in written  # it tried


def _probe_spec(tmp_path: Path, pid: int) -> tuple[str, dict[str, object]]:
    """What reach.py looks for: a canary in the operator's HOME, another folder, another workspace, and the process
    `pid` (the test's own)."""
    canary = f"canary-{secrets.token_hex(8)}"
    home = tmp_path / "home" / ".ssh"
    home.mkdir(parents=True)
    (home / "id_ed25519").write_text(f"key {canary}\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "notes.txt").write_text(f"notes {canary}\n")
    other = example(tmp_path / "other")
    (other.canon / "requirements" / "private.md").write_text(f"private {canary}\n")
    return canary, {"canary": canary, "home_secret": str(home / "id_ed25519"),
                    "other_folder": str(tmp_path / "elsewhere" / "notes.txt"),
                    "other_workspace": str(other.canon / "requirements" / "private.md"), "pid": pid,
                    "loopback": None, "outside": None}


def _reached(text: str) -> dict[str, str]:
    line = next(line for line in text.splitlines() if "REACH {" in line)
    return dict(json.loads(line.split("REACH ", 1)[1]))


def test_the_reach_probe_as_a_sensor_and_as_a_plan_check_finds_nothing(tmp_path: Path) -> None:
    """reach.py and what it looks for are committed into the code (a check's view holds the code, not the test's
    folders), then run by build's sensor at the turn's checkpoint and by plan's check."""
    canary, spec = _probe_spec(tmp_path, os.getpid())
    ws = example(tmp_path / "ws", backend="landlock")
    (ws.code / "probe_reach.py").write_text((HELPERS / "agents" / "hostile" / "reach.py").read_text())
    (ws.code / "probe_spec.json").write_text(json.dumps(spec))
    git(ws.code, "add", "probe_reach.py", "probe_spec.json")
    git(ws.code, "commit", "-qm", "the probe")
    probe = f'{sys.executable} probe_reach.py \\"$(cat probe_spec.json)\\"; exit 1'
    ws.config_file.write_text(ws.config_file.read_text() + f'\n[[build.sensors]]\nname = "reach"\ncommand = "{probe}"\n')
    said = land(ws, {"requirements/probe.md": "---\narea: probe\ntitle: Probe\n---\n\n## PR-1: the probe as a check\n"
                     f"paths: probe.py\nchecks:\n  - {probe.replace(chr(92), '')}\n\nIt looks around.\n"})
    assert "accepted" in said, said
    assert cli("plan-loop", "once", "-w", str(ws.root)).returncode == 0
    plan = json.loads(ws.fix_plan_json.read_text())
    as_check = next(e["excerpt"] for item in plan["items"] if "PR-1" in item["requirements"] for e in item["evidence"])
    done = cli("build-loop", "once", "-w", str(ws.root), "--agent-command", f"{sys.executable} {HELPERS / 'agents' / 'good.py'}")
    assert done.returncode == 0, done.stderr
    prompt = next(ws.role_dir("build").glob("iterations/*/prompt.md")).read_text()
    for where, text in (("a plan check", as_check), ("a sensor, in the next prompt", prompt)):
        found = _reached(text)
        assert not any(found.values()) and canary not in text, (where, found)
        print(f"the reach probe as {where}: {found}")
