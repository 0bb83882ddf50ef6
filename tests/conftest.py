"""Guards for every test: no writes to the real home, no leaked children, no environment drift."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers.processes import live_descendants  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))  # the machine's environment cache: this test's own
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("BANACH_WORKSPACE", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    runtime = tempfile.mkdtemp(prefix="xdg-", dir="/tmp")  # short (socket links go there) and private to this test
    monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
    yield
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(autouse=True)
def _no_environment_drift() -> object:
    before = dict(os.environ)
    yield
    allowed = {"HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "PYTEST_CURRENT_TEST"}
    drift = {k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k)} - allowed
    assert not drift, f"the test changed the environment: {sorted(drift)}"


@pytest.fixture(autouse=True)
def _no_leaked_children() -> object:
    yield
    leaked = live_descendants(os.getpid())
    assert not leaked, f"the test left processes running: {leaked}"


SERIAL = ("slow", "realcli", "ray", "root")  # heavy, or holding a machine-wide lock (useradd): one worker runs them in turn


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (--dist loadgroup, in pyproject's addopts)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    is_root = os.geteuid() == 0
    from shared.isolation.sandbox import landlock_abi

    abi = landlock_abi()
    for item in items:
        if any(mark in item.keywords for mark in SERIAL):
            item.add_marker(pytest.mark.xdist_group("serial"))
        if "root" in item.keywords and not is_root:
            item.add_marker(pytest.mark.skip(reason="needs root (creates accounts or chowns stores); CI runs as root"))
        if "landlock" in item.keywords and abi < 1:
            item.add_marker(pytest.mark.skip(reason="this kernel has no Landlock (needs Linux >= 5.13 with landlock in LSM)"))

from tests.fixtures import measured, measured_landlock, measured_template  # noqa: E402,F401
