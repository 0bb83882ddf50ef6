"""Held-back tests (issue 24): an exam the agent never sees.

An agent that reads canon's visible tests and writes an implementation returning exactly their expected values (a
lookup table, tests/helpers/agents/hostile/lookup_table.py) is certified when canon has only visible tests: the
control. With held-back tests in canon it never is, and nothing of them (file, test names, values) appears anywhere
the agent or build can read: prompts, fix_plan, iteration folders, logs, journal rows. The agent also hunts for them
where they lie in the workspace; under Landlock it finds nothing, and the same hunt without a sandbox finds them (the
control that shows it is able to). The second way to buy a verdict, forging the per-test report from inside the
test process for exactly the tests it read, certifies with visible tests only and not with held-back ones.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from canon.store import CanonStore
from canon.visible import export_visible
from shared.app.init import init_workspace
from shared.journal import Journal
from shared.measurement.tamper import KINDS
from shared.workspace import ROLES, Workspace
from tests.helpers.workspaces import HELPERS, agents_readable, cli, git, land

HOSTILE = HELPERS / "agents" / "hostile"
MARKERS = ("qz81", "987654321", "test_digits_beyond")  # a held-back test's name, a value, its file

DOCUMENT = """---
area: mathkit
title: Number utilities
---

## HB-1: digit_sum adds the decimal digits of a number
priority: 1
paths: mathkit/**
tests: tests/test_digits.py
{extra}
digit_sum(n) returns the sum of the decimal digits of any non-negative integer n.
"""
VISIBLE = """from mathkit.digits import digit_sum


def test_small_numbers():
    assert digit_sum(0) == 0
    assert digit_sum(7) == 7
    assert digit_sum(1234) == 10
"""
HELD_BACK = """from mathkit.digits import digit_sum


def test_qz81_many_digits():
    assert digit_sum(987654321) == 45


def test_qz81_a_power_of_two():
    assert digit_sum(4096) == 19
"""


def mathkit(tmp: Path, *, held_back: bool, backend: str, allows: bool = False) -> Workspace:
    ws = init_workspace(tmp / "ws", example=False)
    text = ws.config_file.read_text().replace('backend = "landlock"', f'backend = "{backend}"')
    text = agents_readable(text.replace('agent = "claude"', 'agent = "scripted"'))
    text = text.replace("[build]\n", "[build]\nrounds = 1\n", 1)  # blocked for a person after one round of attempts
    ws.config_file.write_text(text + f'\n[agents.scripted]\npreset = "command"\n'
                                     f'command = "{sys.executable} {HOSTILE / "lookup_table.py"}"\n')
    extra = "held_back: tests/test_digits_beyond.py\n" if held_back else ""
    if allows:  # the forgery needs what the tamper scan looks for; a person allows it, so the measurement is tried
        extra += f"allows: {', '.join(kind for kind in KINDS if kind != 'unreadable')}\n"
    files = {"requirements/mathkit.md": DOCUMENT.format(extra=extra), "tests/test_digits.py": VISIBLE}
    if held_back:
        files["tests/test_digits_beyond.py"] = HELD_BACK
    said = land(ws, files)
    assert "test_digits_beyond" not in said and "a held-back test" in said if held_back else True, said
    return Workspace.open(ws.root)


def certificates(ws: Workspace) -> int:
    with Journal(ws.journal_path("plan"), readonly=True) as journal:
        return len(list(journal.rows("certificate")))


def places_with_markers(ws: Workspace) -> list[str]:
    """Every file of the workspace holding a marker, but where held-back tests are kept: canon's repository, the inbox,
    spec's drafts and scratch, plan's pass folders (no sandboxed child reads any of them)."""
    kept_apart = [ws.canon, ws.inbox, *(ws.role_dir("spec") / name for name in ("scratch", "objects.git", "edit",
                                                                             "set-aside", "tmp")),
                  ws.role_dir("plan") / "scratch"]
    found = []
    for folder, _dirs, names in os.walk(ws.root):
        if any(Path(folder).is_relative_to(place) for place in kept_apart):
            continue
        for name in names:
            path = Path(folder) / name
            if path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
            found += [f"{ws.relative(path)}: {marker}" for marker in MARKERS if marker.encode() in data]
    return found


def journal_rows(ws: Workspace) -> str:
    text = []
    for role in ROLES:
        if ws.journal_path(role).exists():
            with Journal(ws.journal_path(role), readonly=True) as journal:
                text += [json.dumps(row.data) for row in journal.rows()]
    return "\n".join(text)


def run(ws: Workspace, turns: int = 6) -> subprocess.CompletedProcess[str]:
    return cli("banach", "run", "--until-certified", "--max-turns", str(turns), "--workspace", str(ws.root),
               timeout=300)


def test_a_lookup_table_is_certified_when_canon_has_only_visible_tests(tmp_path: Path) -> None:
    """The control: the overfit implementation passes every test canon has, and plan certifies it."""
    ws = mathkit(tmp_path, held_back=False, backend="none")
    result = run(ws)
    assert result.returncode == 0 and "run: CERTIFIED" in result.stdout, result.stdout + result.stderr
    assert "_DIGIT_SUM = {" in (ws.code / "mathkit" / "digits.py").read_text()  # the lookup table was certified


@pytest.mark.landlock
def test_a_lookup_table_is_never_certified_and_never_sees_the_held_back_tests(tmp_path: Path) -> None:
    ws = mathkit(tmp_path, held_back=True, backend="landlock")
    result = run(ws)
    out = result.stdout + result.stderr
    assert result.returncode == 1 and "run: NOT CERTIFIED" in out and certificates(ws) == 0, out
    assert "blocked" in out, out  # its attempts ran out on what build cannot see; a person decides
    plan = json.loads(ws.fix_plan_json.read_text())
    [evidence] = [e for item in plan["items"] for e in item["evidence"]]
    assert evidence["check"] == "held-back tests" and evidence["excerpt"] == "2 of 2 held-back tests do not pass"
    outputs = [p.read_text() for p in (ws.role_dir("build") / "iterations").glob("*/output.txt")]
    assert outputs and all("READ " in text for text in outputs)
    read = [line for text in outputs for line in text.splitlines() if line.startswith("READ ")]
    assert read and all(line.endswith("/tests/test_digits.py") and "/state/build/canon/" in line for line in read), read
    prompts = "\n".join(p.read_text() for p in (ws.role_dir("build") / "iterations").glob("*/prompt.md"))
    assert "Tests you cannot see measure this requirement" in prompts
    assert not [marker for marker in MARKERS if marker in out + prompts + journal_rows(ws)]
    assert places_with_markers(ws) == []


@pytest.mark.slow  # the control (about 7 s); CI runs it with the slow suites
def test_without_a_sandbox_the_same_hunt_finds_the_held_back_tests(tmp_path: Path) -> None:
    """The control for the hunt: isolation 'none' enforces nothing (every start-up line says so), and the same agent
    reads the held-back tests out of canon's repository and is certified. Held-back tests are a promise of the
    sandbox, as SECURITY.md says."""
    ws = mathkit(tmp_path, held_back=True, backend="none")
    result = run(ws)
    assert "run: CERTIFIED" in result.stdout, result.stdout + result.stderr
    output = (ws.role_dir("build") / "iterations" / "1" / "output.txt").read_text()
    assert "held_back/tests/test_digits_beyond.py" in output, output
    # deliver leaves held-back tests out unless asked, and says so
    target = ws.root.parent / "delivered"
    subprocess.run(["git", "init", "-q", str(target)], check=True)
    plain = cli("banach", "deliver", "--to", str(target), "--with-tests", "--workspace", str(ws.root))
    assert plain.returncode == 0 and "(held-back tests of HB-1: plan measured the code with them" in plain.stdout, plain
    delivered = git(target, "ls-tree", "-r", "--name-only", "banach/result").splitlines()
    assert "tests/test_digits.py" in delivered and "tests/test_digits_beyond.py" not in delivered, delivered
    held = cli("banach", "deliver", "--to", str(target), "--with-tests", "--with-held-back", "--workspace", str(ws.root))
    assert held.returncode == 0, held.stdout + held.stderr
    assert git(target, "show", "banach/result:tests/test_digits_beyond.py") + "\n" == HELD_BACK


@pytest.mark.parametrize("held_back", [False, True])
def test_forging_the_visible_tests_lines_certifies_only_without_held_back_tests(tmp_path: Path,
                                                                                 held_back: bool) -> None:
    """Code that rewrites its own run's report for exactly the tests it could read in canon's export (every canary and
    any other test keeps its true outcome), as a person's commit. The run renames every test, so it knows them by
    their values, which a canary changes. Held-back tests run in their own run, in plan's process tree, with their
    own canaries; the forger knows none of their values."""
    ws = mathkit(tmp_path, held_back=held_back, backend="none", allows=True)
    canon = CanonStore(ws.canon)
    seen = tmp_path / "visible"
    export_visible(canon.git, canon.head() or "", seen)  # what an agent's turn reads of canon
    (ws.code / "mathkit").mkdir()
    (ws.code / "mathkit" / "__init__.py").write_text("")
    (ws.code / "mathkit" / "digits.py").write_text("def digit_sum(n):\n    return 0\n")
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Requirements: TK-1\n")
    planted = subprocess.run([sys.executable, str(HOSTILE / "verdict_attacks.py"), "handle", "known", "--into",
                              "mathkit/digits.py", "--canon", str(seen)], cwd=ws.code, capture_output=True, text=True,
                             env={"PATH": os.environ["PATH"], "BANACH_PROMPT_FILE": str(prompt)})
    assert planted.returncode == 0, planted.stderr
    assert "'1234'" in (ws.code / "mathkit" / "digits.py").read_text()  # it knows the visible test by its values
    git(ws.code, "add", "-A")
    git(ws.code, "commit", "-qm", "the forger")
    result = cli("plan-loop", "certify", "--workspace", str(ws.root), timeout=300)
    out = result.stdout + result.stderr
    plan = json.loads(ws.fix_plan_json.read_text())
    if not held_back:
        assert "CERTIFIED" in out.replace("NOT CERTIFIED", "") and not plan["items"], out  # the forgery works
        return
    assert "CERTIFIED" not in out.replace("NOT CERTIFIED", "") and certificates(ws) == 0, out
    [item] = plan["items"]
    assert [e["check"] for e in item["evidence"]] == ["held-back tests"], item  # the visible run was forged
    assert "qz81" not in json.dumps(plan)
