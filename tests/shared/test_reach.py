"""What a turn's view is made of (shared/isolation/reach.py) and who may start one (shared/isolation/launcher.py)."""
from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

from shared.isolation.launcher import builds_view
from shared.isolation.reach import install_roots, toolchain
from tests.helpers.isolation import view_unavailable


def test_a_virtualenv_gives_its_folder_and_the_python_it_was_made_from(tmp_path: Path) -> None:
    venv.create(tmp_path / "env", with_pip=False)
    roots = install_roots(tmp_path / "env" / "bin" / "python")
    assert tmp_path / "env" in roots
    assert Path(sys.base_prefix).resolve() in [root.resolve() for root in roots] or \
        any(Path(sys.base_executable).resolve().is_relative_to(root) for root in roots)


def test_a_prefix_gives_its_programs_and_libraries_not_its_other_folders(tmp_path: Path) -> None:
    for folder in ("bin", "lib", "share/keyrings", "etc"):
        (tmp_path / "prefix" / folder).mkdir(parents=True)
    (tmp_path / "prefix" / "bin" / "tool").write_text("#!/bin/sh\n")
    roots = install_roots(tmp_path / "prefix" / "bin" / "tool")
    assert roots == [tmp_path / "prefix" / "bin", tmp_path / "prefix" / "lib"]


def test_a_folder_holding_home_or_the_workspace_is_narrowed_to_the_file(tmp_path: Path) -> None:
    """A script kept in HOME's own folder must not make the whole HOME readable."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".ssh").mkdir()
    script = home / "agent.py"
    script.write_text("print('hi')\n")
    found = toolchain((sys.executable, str(script)), "/usr/bin:/bin", [home])
    assert script in found and home not in found and not any(path in home.parents for path in found if path != script)


def test_only_a_view_wrapper_goes_to_the_launcher() -> None:
    assert builds_view((sys.executable, "-I", "-m", "shared.isolation.sandbox", "--view", "--read", "/x", "--", "true"))
    assert not builds_view((sys.executable, "-I", "-m", "shared.isolation.sandbox", "--write", "/x", "--", "true"))
    assert not builds_view(("true", "--view"))  # not the wrapper
    assert not builds_view((sys.executable, "-I", "-m", "shared.isolation.sandbox", "--", "x", "--view"))  # the program's


LAUNCHED = """
import subprocess, sys
from pathlib import Path
from shared.isolation import launcher
from shared.isolation.sandbox import restrict_writes
from shared.isolation.view import SYSTEM_FOLDERS
if sys.argv[1] == "launcher":
    launcher.start()
restrict_writes([Path(sys.argv[2])])  # as build does: writes to its own folder only, which forbids mounts
reads = [flag for folder in SYSTEM_FOLDERS for flag in ("--read", folder)]
argv = (sys.executable, "-I", "-m", "shared.isolation.sandbox", "--view", *reads, "--no-landlock", "--", "/bin/true")
proc = launcher.popen(argv, cwd="/", stderr=subprocess.PIPE)
print(proc.wait(), proc.stderr.read().decode().strip()[-80:])
"""


@pytest.mark.landlock
@pytest.mark.skipif(bool(view_unavailable()), reason=f"no view on this machine: {view_unavailable()}")
@pytest.mark.parametrize("how", ["launcher", "plain"])
def test_a_loop_under_landlock_starts_views_only_through_its_launcher(tmp_path: Path, how: str) -> None:
    """The kernel refuses mounts to a Landlock-restricted thread and what it starts: the control shows it."""
    done = subprocess.run([sys.executable, "-c", LAUNCHED, how, str(tmp_path)], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[2])
    status = done.stdout.split()[0] if done.stdout else done.stderr
    assert (status == "0") == (how == "launcher"), done.stdout + done.stderr
