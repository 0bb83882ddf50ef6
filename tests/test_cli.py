"""Every command has help with an example; bad input gives an error that says where and what to do."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import click
import pytest

from build_loop.cli import cli as build_cli
from plan_loop.cli import cli as plan_cli
from shared.app.cli import cli as banach_cli
from spec_loop.cli import cli as spec_cli
from tests.helpers.workspaces import cli, example


def commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in group.commands.items():
        found.append((*prefix, name))
        if isinstance(command, click.Group):
            found += commands(command, (*prefix, name))
    return found


@pytest.mark.parametrize(("program", "group"), [("banach", banach_cli), ("spec-loop", spec_cli), ("plan-loop", plan_cli),
                                                 ("build-loop", build_cli)])
def test_every_command_has_help_with_an_example(program: str, group: click.Group) -> None:
    assert group.help and "Example:" in group.help
    for path in commands(group):
        command = group
        for part in path:
            command = command.commands[part]  # type: ignore[attr-defined]
        assert command.help and "Example:" in command.help, f"{program} {' '.join(path)} has no example in its help"
    result = cli(program, "--help")
    assert result.returncode == 0 and "Usage:" in result.stdout


def test_not_a_workspace_says_what_to_do(tmp_path: Path) -> None:
    result = cli("banach", "status", "--workspace", str(tmp_path))
    assert result.returncode == 1
    assert "is not a Banach workspace" in result.stderr and "banach init" in result.stderr


def test_bad_config_names_the_file_and_key(tmp_path: Path) -> None:
    ws = example(tmp_path)
    ws.config_file.write_text(ws.config_file.read_text() + "\n[build.extra]\nx = 1\n")
    text = ws.config_file.read_text().replace("max_attempts = 4", "max_attempts = 0")
    ws.config_file.write_text(text)
    result = cli("banach", "status", "--workspace", str(ws.root))
    assert result.returncode == 1
    assert "banach.toml: invalid configuration" in result.stderr
    assert "build.max_attempts:" in result.stderr and "build.extra:" in result.stderr


def test_unknown_agent_preset_is_named(tmp_path: Path) -> None:
    ws = example(tmp_path)
    ws.config_file.write_text(ws.config_file.read_text().replace('agent = "sim"', 'agent = "claud"'))
    result = cli("build-loop", "once", "--workspace", str(ws.root))
    assert result.returncode == 1 and "names agent preset 'claud', which is not defined" in result.stderr


def test_a_corrupted_fix_plan_says_how_to_recover(measured) -> None:  # type: ignore[no-untyped-def]
    measured.fix_plan_json.write_text('{"items": [')
    result = cli("build-loop", "once", "--workspace", str(measured.root))
    assert result.returncode == 1 and "fix_plan is not valid" in result.stderr and "plan-loop once" in result.stderr
    assert cli("plan-loop", "once", "--workspace", str(measured.root)).returncode == 0
    assert json.loads(measured.fix_plan_json.read_text())["residual"] == 5


def test_init_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "file").write_text("mine")
    result = cli("banach", "init", str(tmp_path / "x"))
    assert result.returncode == 1 and "is not empty" in result.stderr
    assert (tmp_path / "x" / "file").read_text() == "mine"


def test_an_empty_workspace_says_canon_needs_requirements(tmp_path: Path) -> None:
    assert cli("banach", "init", str(tmp_path / "e")).returncode == 0
    result = cli("plan-loop", "once", "--workspace", str(tmp_path / "e"))
    assert result.returncode == 1 and "canon has no version yet" in result.stderr


def test_a_moved_workspace_keeps_working(measured, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    moved = tmp_path / "elsewhere" / "moved"
    shutil.move(str(measured.root), moved)
    for path in moved.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".md", ".toml", ".conf"):
            assert str(measured.root) not in path.read_text(errors="replace"), path
    assert cli("build-loop", "once", "--workspace", str(moved)).returncode == 0
    info = json.loads(cli("banach", "status", "--json", "--workspace", str(moved)).stdout)
    assert info["paths"]["canon"] == "canon" and info["paths"]["journals"]["build"] == "state/build/journal.db"


@pytest.mark.parametrize("program", ["banach", "spec-loop", "plan-loop", "build-loop"])
def test_every_program_tells_its_version(program: str) -> None:
    from importlib.metadata import version

    result = cli(program, "--version")
    assert result.returncode == 0 and version("banach") in result.stdout


def test_a_mistyped_key_gets_a_did_you_mean(tmp_path: Path) -> None:
    ws = example(tmp_path)
    ws.config_file.write_text(ws.config_file.read_text().replace("[build]", "[build]\nmax_atempts = 3", 1)
                              + '\n[agents.other]\npreset = "command"\ncomand = "true"\n')
    result = cli("banach", "status", "--workspace", str(ws.root))
    assert result.returncode == 1
    assert "build.max_atempts: Extra inputs are not permitted (did you mean 'max_attempts'?)" in result.stderr
    assert "agents.other.comand: Extra inputs are not permitted (did you mean 'command'?)" in result.stderr


def test_commands_find_the_workspace_from_a_subfolder(tmp_path: Path) -> None:
    ws = example(tmp_path)
    result = cli("banach", "status", "--json", cwd=ws.code / "textkit")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["canon_version"] == 1


def test_init_says_what_to_do_next(tmp_path: Path) -> None:
    result = cli("banach", "init", str(tmp_path / "ws"))
    assert result.returncode == 0, result.stderr
    assert f"spec-loop edit requirements/main.md -w {tmp_path / 'ws'}" in result.stdout
    assert f"banach up -w {tmp_path / 'ws'}" in result.stdout


def test_monitor_with_too_few_passes_says_so(tmp_path: Path) -> None:
    ws = example(tmp_path)
    result = cli("banach", "monitor", "--workspace", str(ws.root))
    assert result.returncode == 0, result.stderr
    assert "None" not in result.stdout and "no fit yet" in result.stdout


def test_a_crash_writes_a_report_with_every_version(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    program = ("import click\nfrom shared.boundary import run_cli\n\n@click.command()\ndef broken():\n"
               "    raise RuntimeError('a bug')\n\nrun_cli(broken, 'banach')\n")
    env = {**os.environ, "TMPDIR": str(tmp_path), "BANACH_WORKSPACE": str(tmp_path / "nowhere")}
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 3 and "crash report" in result.stderr, result.stderr
    report = next(tmp_path.glob("crash-banach-*.txt")).read_text()
    for line in ("banach 0.", "python 3.", "git 2.", "kernel Linux", "landlock ABI", "RuntimeError: a bug"):
        assert line in report, report


def test_the_workspace_may_come_before_the_subcommand(measured) -> None:  # type: ignore[no-untyped-def]
    """Issue 43: `banach -w ws status` was refused; git has -C. Every program takes it before its subcommand too."""
    root = str(measured.root)
    for program, args in (("banach", ["status", "--json"]), ("build-loop", ["unblock"]), ("spec-loop", ["log"]),
                          ("banach", ["journal", "show", "plan"])):
        result = cli(program, "-w", root, *args, cwd=measured.root.parent)
        assert result.returncode == 0, (program, args, result.stderr)
    assert json.loads(cli("banach", "-w", root, "status", "--json").stdout)["canon_version"] == 1
    # after the subcommand, as before; and there it wins
    assert cli("banach", "-w", "/nowhere", "status", "-w", root).returncode == 0


def test_help_lists_commands_by_what_a_person_is_doing() -> None:
    """Issue 43: help listed 17 commands A to Z."""
    from shared.app.sections import SECTIONS

    text = cli("banach", "--help").stdout
    commands = text[text.index("\nStart:\n"):]
    titles = [line.rstrip(":") for line in commands.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert titles == ["Start", "Watch", "Steer", "Deliver", "Run in production"], titles
    listed = [line.split()[0] for line in commands.splitlines() if line.startswith("  ") and line.split()]
    assert listed[:3] == ["init", "demo", "doctor"]
    assert sorted(listed) == sorted(banach_cli.commands), listed  # each once
    assert [name for _, names in SECTIONS for name in names] == listed


def test_the_isolation_banner_is_shown_by_doctor_and_with_v_only(tmp_path: Path) -> None:
    """Issue 43: every loop command printed a long isolation banner with the machine's cgroup paths."""
    ws = example(tmp_path, backend="landlock")
    quiet = cli("plan-loop", "once", "-w", str(ws.root))
    assert quiet.returncode == 0 and "isolation" not in quiet.stderr and "cgroup" not in quiet.stderr, quiet.stderr
    loud = cli("plan-loop", "-v", "once", "-w", str(ws.root))
    assert "plan-loop: isolation landlock: Landlock ABI" in loud.stderr, loud.stderr
    doctor = cli("banach", "doctor", "-w", str(ws.root)).stdout
    assert "spec-loop writes only canon, inbox, state/spec; plan-loop writes only plan, state/plan; build-loop writes " \
           "only code, state/build" in doctor
    unenforced = example(tmp_path / "none", backend="none")
    assert "NOTHING IS ENFORCED" in cli("plan-loop", "once", "-w", str(unenforced.root)).stderr  # a warning, always


def test_spec_loop_names_every_problem_of_a_document_at_once(tmp_path: Path) -> None:
    """Issue 43: the problems of one document came one a try (line 10 first, line 7 only after that fix)."""
    ws = example(tmp_path)
    draft = tmp_path / "more.md"
    draft.write_text("## TK-7: first\npriority: high\n\ntext\n\n## TK-8: second\ncolour: red\n\ntext\n\n## TK-9: third\n"
                     "paths: ../outside\n\ntext\n")
    result = cli("spec-loop", "add", str(draft), "-w", str(ws.root))
    assert result.returncode == 1
    assert result.stdout.startswith("refused more.md:\n"), result.stdout
    said = [line for line in result.stdout.splitlines() if line.startswith("  more.md:")]
    assert [int(line.split(":")[1]) for line in said] == [2, 7, 12], result.stdout
