"""The project's npm packages and Go modules (shared/environment/ecosystems.py): read from the dependency files alone,
built in a view through Banach's index proxy, once per dependency set. Go's build is tried against a module proxy in a
local folder (GOPROXY=file://...), since this machine reaches no Go module proxy; npm's against a lockfile that points
at a host that is not the registry, which the proxy refuses without a connection."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.app.init import init_workspace
from shared.environment import ProjectEnvError
from shared.environment.ecosystems import attach, go_needs, node_needs
from shared.isolation.sandbox import landlock_abi
from shared.workspace import Workspace
from tests.helpers.polyglot_runs import measure

BACKEND = "landlock" if landlock_abi() >= 1 else "none"


def test_what_is_needed_is_read_from_the_dependency_files() -> None:
    assert node_needs({"package.json": b'{"name": "x"}'}) == {}
    assert go_needs({"go.mod": b"module x\n\ngo 1.19\n"}) == {}
    with pytest.raises(ProjectEnvError, match="package-lock.json"):
        node_needs({"package.json": b'{"devDependencies": {"tsx": "4.23.15"}}'})
    lock = {"package.json": b'{"dependencies": {"a": "1"}}', "package-lock.json": b"{}", ".npmrc": b"registry=x"}
    assert set(node_needs(lock)) == {"package.json", "package-lock.json"}  # never the project's .npmrc
    assert set(go_needs({"go.mod": b"module x\nrequire a.b/c v1.0.0\n", "go.sum": b"", "go.work": b""})) == \
        {"go.mod", "go.sum"}


def _workspace(tmp: Path, cache: Path) -> Workspace:
    """cache: a short path (the index proxy's socket is made there, and a unix socket's address holds 107 bytes)."""
    ws = init_workspace(tmp / "ws", example=False)
    text = ws.config_file.read_text().replace('backend = "landlock"', f'backend = "{BACKEND}"')
    ws.config_file.write_text(text + f'\n[env]\ncache = "{cache}"\n')
    return Workspace.open(ws.root)


@pytest.fixture
def cache() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="bc-", dir="/tmp"))
    yield folder
    subprocess.run(["chmod", "-R", "u+w", str(folder)], check=False)
    shutil.rmtree(folder, ignore_errors=True)


def _module_proxy(folder: Path) -> None:
    """A Go module proxy in a folder: example.org/greet v1.0.0, as proxy.golang.org would serve it."""
    base = folder / "example.org" / "greet" / "@v"
    base.mkdir(parents=True)
    (base / "list").write_text("v1.0.0\n")
    (base / "v1.0.0.info").write_text('{"Version": "v1.0.0", "Time": "2024-01-01T00:00:00Z"}\n')
    (base / "v1.0.0.mod").write_text("module example.org/greet\n\ngo 1.19\n")
    with zipfile.ZipFile(base / "v1.0.0.zip", "w") as archive:
        archive.writestr("example.org/greet@v1.0.0/go.mod", "module example.org/greet\n\ngo 1.19\n")
        archive.writestr("example.org/greet@v1.0.0/greet.go",
                         'package greet\n\nfunc Hello(name string) string { return "hello, " + name }\n')


@pytest.mark.skipif(not shutil.which("go"), reason="needs go (apt-get install golang-go)")
def test_go_modules_are_downloaded_in_a_view_once_and_a_conformance_run_uses_them_offline(tmp_path: Path,
                                                                                          cache: Path) -> None:
    proxy = tmp_path / "goproxy"
    _module_proxy(proxy)
    code = tmp_path / "code"
    code.mkdir()
    (code / "go.mod").write_text("module example.com/app\n\ngo 1.19\n\nrequire example.org/greet v1.0.0\n")
    (code / "app.go").write_text('package app\n\nimport "example.org/greet"\n\n'
                                 'func Greet() string { return greet.Hello("go") }\n')
    env = {**os.environ, "GOPROXY": f"file://{proxy}", "GOSUMDB": "off", "GOFLAGS": "-mod=mod",
           "GOMODCACHE": str(tmp_path / "tidy"), "GOCACHE": str(tmp_path / "gocache")}
    subprocess.run(["go", "mod", "tidy"], cwd=code, env=env, check=True, capture_output=True)
    assert "example.org/greet v1.0.0 h1:" in (code / "go.sum").read_text()
    operator = {**os.environ, "GOPROXY": f"file://{proxy}", "GOSUMDB": "off"}  # the operator's settings
    ws = _workspace(tmp_path, cache)
    files = {name: (code / name).read_bytes() for name in ("go.mod", "go.sum")}
    found = attach(ws, "plan", files, environ=operator)
    modules = found["go_modules"]
    assert (modules / "example.org" / "greet@v1.0.0" / "greet.go").is_file()
    assert attach(ws, "build", files, environ=operator) == found  # the machine's: built once, found by the next role
    canon = tmp_path / "canon" / "tests"
    canon.mkdir(parents=True)
    (canon / "app_test.go").write_text('package canon\n\nimport (\n\t"testing"\n\n\t"example.com/app"\n)\n\n'
                                       'func TestGreets(t *testing.T) {\n\tif got := app.Greet(); got != "hello, go" {\n'
                                       '\t\tt.Errorf("got %q", got)\n\t}\n}\n')
    verdict = measure(tmp_path / "run", canon.parent, code, ("tests/app_test.go",), go_modules=modules)
    assert verdict.passed, verdict.summary() + verdict.output


@pytest.mark.skipif(not shutil.which("npm"), reason="needs npm")
@pytest.mark.skipif(BACKEND == "none", reason="the index proxy needs a sandbox (Landlock) to be the only way out")
def test_npm_reaches_the_registry_only(tmp_path: Path, cache: Path) -> None:
    ws = _workspace(tmp_path, cache)
    lock = {"name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": True, "packages": {
        "": {"name": "app", "version": "1.0.0", "dependencies": {"left-pad": "1.3.0"}},
        "node_modules/left-pad": {"version": "1.3.0", "resolved": "https://downloads.example.com/left-pad-1.3.0.tgz",
                                  "integrity": "sha512-" + "A" * 86 + "=="}}}
    files = {"package.json": json.dumps({"name": "app", "version": "1.0.0", "dependencies": {"left-pad": "1.3.0"}}).encode(),
             "package-lock.json": json.dumps(lock).encode()}
    with pytest.raises(ProjectEnvError) as raised:
        attach(ws, "plan", files)
    assert "downloads.example.com:443" in str(raised.value) and "not the package index" in str(raised.value), raised.value
    assert not any(cache.glob("npm-*/node_modules"))  # nothing half-built is taken for an environment
