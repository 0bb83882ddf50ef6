"""Issue 41's "done when": a test taken from a real project's own suite measures under Banach as it does in the project.

Each library is vendored as its sdist at the release before a real upstream fix (tests/data/*/VENDORED.md), and the
conformance test is that fix's own test. Walked as a new user walks it: the sdist becomes the user's repository,
`banach init --code` clones it, `spec-loop add` brings the requirement and the test. Where the test needs the
project's test set-up, intake refuses it naming why and the one command that brings it in, and that command makes
it measurable. Then a SIMULATED agent (tests/helpers/agents/upstream_fix.py) applies a plausible wrong fix, which is
never certified, and then the upstream fix, which certifies in one turn.

- Jinja2 3.1.3: a fixture of the project's tests/conftest.py (`env`);
- platformdirs 4.3.1 (hatchling with hatch-vcs): a fixture of a pytest plugin of its test extra (pytest-mock's
  `mocker`);
- freezegun 1.4.0 (setuptools, setup.cfg): a library that reads frames (its ignore list) 28 lines above the fix.

A pytest ini option is the fourth kind the issue names; no real fix was found whose own test fails in the project
only because of one (tests/spec_loop/test_project_set_up.py freezes a project's options into canon)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from shared.isolation.sandbox import landlock_abi
from tests.helpers.workspaces import AGENTS, cli, git

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Project:
    folder: str
    requirement: str
    test_name: str
    test: str
    refused: tuple[str, ...] = ()  # what the first intake says, when the test needs the project's set-up
    brings: tuple[str, ...] = ()  # the arguments that bring it in
    config: str = ""  # banach.toml's lines for it


PROJECTS = {
    "jinja2": Project("Jinja2-3.1.3", """---
area: filters
title: Jinja2, the xmlattr filter
---

## JINJA-1: xmlattr refuses keys that would end the attribute's name
priority: 1
paths: src/jinja2/filters.py
tests: tests/test_xmlattr.py

The `xmlattr` filter raises ValueError for a key holding a space, `/`, `>` or `=`, which would move an HTML parser
from the attribute's name to its value (GHSA-h75v-3vvj-5mfj).
""", "test_xmlattr.py", '''import pytest

from jinja2 import Environment


class TestFilter:
    @pytest.mark.parametrize("sep", ("\\t", "\\n", "\\f", " ", "/", ">", "="))
    def test_xmlattr_key_invalid(self, env: Environment, sep: str) -> None:
        with pytest.raises(ValueError, match="Invalid character"):
            env.from_string("{{ {key: 'my_class'}|xmlattr }}").render(
                key=f"class{sep}onclick=alert(1)"
            )
''', refused=("it uses the fixture 'env', which canon does not define: the project defines it in "
              "tests/conftest.py:10 (the code's, at ", "Freeze it into canon: spec-loop add --from-code tests/conftest.py"),
        brings=("--from-code", "tests/conftest.py", "--from-code", "setup.cfg"),
        # its run-time dependency is named in setup.py and in src/Jinja2.egg-info, neither of which the environment
        # reads (setup.py is code; an egg-info is read at the root only), and the intake says to add it here
        config='[env]\nrequirements = ["MarkupSafe>=2.0"]\n'),
    "platformdirs": Project("platformdirs-4.3.1", """---
area: macos
title: platformdirs, Homebrew's paths
---

## PD-1: a multipath's path is its first folder
priority: 1
paths: src/platformdirs/*.py
tests: tests/test_macos_paths.py

On macOS under Homebrew, `site_data_path` and `site_cache_path` are the first folder of their `_dir`, even when
`multipath` is on.
""", "test_macos_paths.py", '''from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from platformdirs.macos import MacOS

if TYPE_CHECKING:
    from pytest_mock import MockerFixture


@pytest.fixture(autouse=True)
def _fix_os_pathsep(mocker: MockerFixture) -> None:
    """If we're not running on macOS, set `os.pathsep` to what it should be on macOS."""
    if sys.platform != "darwin":  # pragma: darwin no cover
        mocker.patch("os.pathsep", ":")
        mocker.patch("os.path.pathsep", ":")


@pytest.mark.parametrize(
    "params",
    [
        pytest.param({}, id="no_args"),
        pytest.param({"appname": "foo"}, id="app_name"),
        pytest.param({"appname": "foo", "version": "v1.0"}, id="app_name_version"),
    ],
)
@pytest.mark.parametrize(
    "site_func",
    [
        "site_data_dir",
        "site_config_dir",
        "site_cache_dir",
        "site_runtime_dir",
        "site_cache_path",
        "site_data_path",
    ],
)
@pytest.mark.parametrize("multipath", [pytest.param(True, id="multipath"), pytest.param(False, id="singlepath")])
def test_macos_homebrew(mocker: MockerFixture, params: dict[str, Any], multipath: bool, site_func: str) -> None:
    mocker.patch("sys.prefix", "/opt/homebrew/opt/python")

    result = getattr(MacOS(multipath=multipath, **params), site_func)

    home = str(Path("~").expanduser())
    suffix_elements = tuple(params[i] for i in ("appname", "version") if i in params)
    suffix = os.sep.join(("", *suffix_elements)) if suffix_elements else ""  # noqa: PTH118

    expected_path_map = {
        "site_cache_path": Path(f"/opt/homebrew/var/cache{suffix}"),
        "site_data_path": Path(f"/opt/homebrew/share{suffix}"),
    }
    expected_map = {
        "site_data_dir": f"/opt/homebrew/share{suffix}",
        "site_config_dir": f"/opt/homebrew/share{suffix}",
        "site_cache_dir": f"/opt/homebrew/var/cache{suffix}",
        "site_runtime_dir": f"{home}/Library/Caches/TemporaryItems{suffix}",
    }
    if multipath:
        expected_map["site_data_dir"] += f":/Library/Application Support{suffix}"
        expected_map["site_config_dir"] += f":/Library/Application Support{suffix}"
        expected_map["site_cache_dir"] += f":/Library/Caches{suffix}"
    expected = expected_path_map[site_func] if site_func.endswith("_path") else expected_map[site_func]

    assert result == expected
''', refused=("it uses the fixture 'mocker', which the pytest plugin pytest_mock (pytest-mock",
              "Name it in canon: spec-loop add --plugin pytest_mock"), brings=("--plugin", "pytest_mock")),
    "freezegun": Project("freezegun-1.4.0", """---
area: time
title: freezegun, time_ns
---

## FG-1: time_ns keeps the frozen time's fraction of a second
priority: 1
paths: freezegun/api.py
tests: tests/test_time_ns.py

Under `freeze_time`, `time.time_ns()` is the frozen time in nanoseconds, its fraction of a second included, so
that uuid1() values made within one second differ.
""", "test_time_ns.py", '''import time

import pytest

from freezegun import freeze_time

HAS_TIME_NS = hasattr(time, "time_ns")


@pytest.mark.skipif(not HAS_TIME_NS,
                    reason="time.time_ns is present only on 3.7 and above")
def test_time_ns_with_microseconds():
    freezer = freeze_time("2024-03-20 18:21:10.12345")

    with freezer:
        assert time.time_ns() == 1710958870123450112

    assert time.time_ns() != 1710958870123450112
'''),
}


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def use_agent(ws: Path, which: str) -> None:
    config = ws / "banach.toml"
    text = config.read_text()
    start = text.index("[agents.scripted]")
    config.write_text(text[:start] + f'[agents.scripted]\npreset = "command"   # SIMULATED: a scripted stand-in\n'
                                     f'command = "{sys.executable} {AGENTS / "upstream_fix.py"} {which}"\n')


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_the_upstream_fix_certifies_in_one_turn_and_a_wrong_one_never(tmp_path: Path, name: str) -> None:
    project = PROJECTS[name]
    source, ws = tmp_path / name, tmp_path / "ws"
    shutil.copytree(DATA / project.folder, source, ignore=shutil.ignore_patterns("VENDORED.md"))
    subprocess.run(["git", "init", "-q", "-b", "main", str(source)], check=True)
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", f"{name} from its sdist")
    ok(cli("banach", "init", str(ws), "--code", str(source)))
    config = ws / "banach.toml"
    text = config.read_text().replace('agent = "claude"', 'agent = "scripted"')
    if landlock_abi() < 1:
        text = text.replace('backend = "landlock"', 'backend = "none"')
    config.write_text(text + "\n" + project.config + "\n[agents.scripted]\n")
    use_agent(ws, "wrong")
    (tmp_path / "requirement.md").write_text(project.requirement)
    (tmp_path / project.test_name).write_text(project.test)

    added = cli("spec-loop", "add", "requirement.md", project.test_name, "-w", str(ws), cwd=tmp_path, timeout=900)
    said = added.stdout + added.stderr
    if project.refused:  # the intake that cannot measure the test says why, and what to run
        assert added.returncode == 1, said
        assert "conformance tests runs and fails" not in said, said
        for words in project.refused:
            assert words in said, said
        added = cli("spec-loop", "add", "requirement.md", project.test_name, *project.brings, "-w", str(ws),
                    cwd=tmp_path, timeout=900)
        said = added.stdout + added.stderr
    assert added.returncode == 0, said
    assert "conformance tests runs and fails (the residual build will work on)" in said, said

    wrong = cli("banach", "run", "--until-certified", "--max-turns", "2", "-w", str(ws), timeout=1200)
    assert wrong.stdout.strip().splitlines()[-1].startswith("run: NOT CERTIFIED: turn budget spent"), wrong.stdout
    assert ": keep" not in wrong.stdout, wrong.stdout  # the wrong fix is never kept either
    status = json.loads(ok(cli("banach", "status", "--json", "-w", str(ws))))
    assert status["certified"] is False, status

    use_agent(ws, "right")
    right = cli("banach", "run", "--until-certified", "--max-turns", "1", "-w", str(ws), timeout=1200)
    last = ok(right).strip().splitlines()[-1]
    assert last.startswith("run: CERTIFIED: plan pass ") and "(1 of 1 requirements measured)" in last, right.stdout
    status = json.loads(ok(cli("banach", "status", "--json", "-w", str(ws))))
    assert status["certified"] is True, status
