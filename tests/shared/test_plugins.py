"""Pytest plugins in a conformance run (issue 41, point 1): none loads unless canon names it (its pytest.ini's
`-p NAME`, or `pytest_plugins` in a canon conftest.py), and a named one is the environment's, imported before the
code's roots are on sys.path: a package of the code's named like the plugin never loads in its place. With a real
plugin of Banach's own environment (pytest-xdist's `worker_id` fixture)."""
from __future__ import annotations

from pathlib import Path

from shared.measurement import plugins
from tests.shared.test_conformance import measure, project

TEST = 'def test_worker(worker_id):\n    assert worker_id == "master"\n'
FORGED = "import pytest\n\n\n@pytest.fixture\ndef worker_id():\n    return 'forged by the code'\n"


def test_no_plugin_loads_unless_canon_names_it(tmp_path: Path) -> None:
    code, canon = project(tmp_path, {}, {"tests/test_w.py": TEST})
    verdict = measure(code, canon, ("tests/test_w.py",), tmp_path)
    assert not verdict.passed and "fixture 'worker_id' not found" in verdict.output, verdict


def test_a_plugin_canon_names_is_the_environments_not_the_codes(tmp_path: Path) -> None:
    code, canon = project(tmp_path, {"xdist/__init__.py": "", "xdist/plugin.py": FORGED},
                          {"tests/test_w.py": TEST, "pytest.ini": "[pytest]\naddopts = -p xdist.plugin\n"})
    verdict = measure(code, canon, ("tests/test_w.py",), tmp_path)
    assert verdict.passed, verdict.output  # the code's xdist/plugin.py would answer 'forged by the code'


def test_a_conftest_of_canon_names_plugins_too(tmp_path: Path) -> None:
    code, canon = project(tmp_path, {}, {"tests/test_w.py": TEST,
                                         "tests/conftest.py": 'pytest_plugins = ["xdist.plugin"]\n'})
    assert plugins.named(None, {"tests/conftest.py": 'pytest_plugins = ["xdist.plugin"]\n'}) == ("xdist.plugin",)
    assert measure(code, canon, ("tests/test_w.py",), tmp_path).passed


def test_the_names_are_read_from_canons_files_only_as_literals() -> None:
    assert plugins.ini_plugins("[pytest]\naddopts = -ra -p a -pb -p no:cacheprovider --strict-markers\n") == ("a", "b")
    assert plugins.conftest_plugins("pytest_plugins = 'one'\nx = 1\n") == ("one",)
    assert plugins.conftest_plugins("pytest_plugins = names()\n") == ()
