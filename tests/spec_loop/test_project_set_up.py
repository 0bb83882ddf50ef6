"""A test taken from the project's own suite (issue 41, point 1): what it needs of the project's test set-up is
frozen into canon by a person, or the test is refused at intake naming what it needs, where it is, and the one
command that brings it in. Through the real executables, on the bundled example with a person's commit of the
project's own tests/conftest.py and pytest options; the dry run never calls such a test "runs and fails"."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from canon.store import CanonStore
from shared.workspace import Workspace
from tests.helpers.workspaces import cli, example, git

CONFTEST = '''import pytest


@pytest.fixture
def words():
    """The project's own fixture."""
    return "hello world"
'''
DOC = """## EX-1: shout says words loudly
paths: textkit/shout.py
tests: tests/test_shout.py

`textkit.shout.shout(text)` is the text in capitals.
"""
TEST = '''def test_shout(words):
    from textkit.shout import shout

    assert shout(words) == "HELLO WORLD"
'''
PLUGIN_TEST = '''def test_shout_twice(twice):
    from textkit.shout import shout

    assert shout(twice) == "AA"
'''


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    ws = example(tmp_path)
    (ws.code / "tests").mkdir(exist_ok=True)
    (ws.code / "tests" / "conftest.py").write_text(CONFTEST)
    (ws.code / "setup.cfg").write_text("[tool:pytest]\naddopts = --cov=textkit -p no:cacheprovider\n"
                                       "filterwarnings =\n    error\n")
    git(ws.code, "add", "tests/conftest.py", "setup.cfg")
    git(ws.code, "commit", "-qm", "the project's own test set-up")
    (tmp_path / "shout.md").write_text(DOC)
    (tmp_path / "test_shout.py").write_text(TEST)
    return ws


def spec(ws: Workspace, tmp_path: Path, *args: str) -> tuple[int, str]:
    result = cli("spec-loop", "add", *args, "--workspace", str(ws.root), cwd=tmp_path, timeout=300)
    return result.returncode, result.stdout + result.stderr


def test_a_fixture_of_the_projects_conftest_is_refused_then_frozen_into_canon(ws: Workspace, tmp_path: Path) -> None:
    head = git(ws.code, "rev-parse", "HEAD")
    code, said = spec(ws, tmp_path, "shout.md", "test_shout.py")
    assert code == 1 and "conformance tests runs and fails" not in said, said
    assert (f"it uses the fixture 'words', which canon does not define: the project defines it in tests/conftest.py:5 "
            f"(the code's, at {head[:12]})") in said, said
    assert "Freeze it into canon: spec-loop add --from-code tests/conftest.py" in said, said
    assert CanonStore(ws.canon).version() == 1  # canon did not move

    code, said = spec(ws, tmp_path, "shout.md", "test_shout.py", "--from-code", "tests/conftest.py")
    assert code == 0, said
    assert "EX-1 conformance tests runs and fails (the residual build will work on)" in said, said
    # the project's options that change outcomes are named, with the command that freezes them
    assert ("note: the project's pytest options in setup.cfg (filterwarnings) are not canon's, and conformance tests "
            "run with canon's alone. Where a test's outcome depends on them, freeze them into canon: spec-loop add "
            "--from-code setup.cfg") in said, said
    store = CanonStore(ws.canon)
    assert store.read("HEAD", "tests/conftest.py") == CONFTEST  # canon's now: the agent cannot change it

    code, said = spec(ws, tmp_path, "--from-code", "setup.cfg")
    assert code == 0, said
    ini = CanonStore(ws.canon).read("HEAD", "pytest.ini") or ""
    assert "[pytest]\naddopts = -p no:cacheprovider\nfilterwarnings =\n    error\n" in ini, ini
    assert "left out of addopts (options of plugins conformance runs do not load): --cov=textkit" in ini, ini
    assert "runs and fails" in said and "are not canon's" not in said, said  # measured again, with its options


def test_a_fixture_of_a_plugin_is_named_with_the_command_and_one_nobody_defines_is_refused(ws: Workspace,
                                                                                            tmp_path: Path) -> None:
    (tmp_path / "test_shout.py").write_text(PLUGIN_TEST)
    code, said = spec(ws, tmp_path, "shout.md", "test_shout.py")
    assert code == 1 and "conformance tests runs and fails" not in said, said
    assert ("it uses the fixture 'twice', which neither canon, the code at") in said, said
    assert "define it in a conftest.py in canon (spec-loop add tests/conftest.py)" in said, said


def test_a_plugin_canon_names_that_the_environment_lacks_is_refused(ws: Workspace, tmp_path: Path) -> None:
    code, said = spec(ws, tmp_path, "shout.md", "test_shout.py", "--from-code", "tests/conftest.py",
                      "--plugin", "pytest_nowhere")
    assert code == 1, said
    assert ("canon names the pytest plugin pytest_nowhere, which the project's environment cannot import "
            "(ModuleNotFoundError: No module named 'pytest_nowhere'): add the package that provides it") in said, said
    assert not json.loads(cli("banach", "status", "--json", "-w", str(ws.root)).stdout or "{}").get("certified")
