"""What a conformance test needs of the project's test set-up, and where it is, for the dry run (spec_loop/dry_run.py).

A test taken from a project's own suite may use a fixture of the project's conftest.py, of a pytest plugin in its
test dependencies, or its pytest options. A conformance run reads none of the code's (the agent writes the code) and
loads no plugin canon does not name, so such a test fails with `fixture 'env' not found` at every commit, fixed or
not: it can never pass, and build would spend every attempt on it. The dry run refuses it, naming the fixture, the file
or plugin that defines it, and the one command that freezes it into canon:

    fixture 'env' ... defined in the code's tests/conftest.py:10 ...: spec-loop add --from-code tests/conftest.py
    fixture 'mocker' ... the pytest plugin pytest_mock (pytest-mock 3.14.0) ...: spec-loop add --plugin pytest_mock

The code is read from the commit's objects and the environment's files as data (never imported)."""
from __future__ import annotations

import ast
import configparser
import re
import site
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from canon.pytest_config import INI, PROJECT_FILES, PytestConfigError, section_of
from shared.environment import ProjectEnv
from shared.git import GitRepo

_MISSING = re.compile(r"fixture '([A-Za-z_][A-Za-z0-9_]*)' not found")
_NO_PLUGIN = re.compile(r"testrun: canon names the pytest plugin (\S+), which the project's environment cannot import "
                        r"\(([^\n]*?)\);")
MAX_PLUGIN_FILES = 400  # of one plugin's package, read for its fixtures
# options that change what a test does or what its outcome is, rather than how pytest prints
VERDICT_OPTIONS = ("filterwarnings", "asyncio_mode", "usefixtures", "xfail_strict", "log_level", "python_files",
                   "python_classes", "python_functions", "timeout", "pythonpath", "markers", "required_plugins",
                   "doctest_optionflags")


@dataclass(frozen=True)
class Definition:
    where: str  # "tests/conftest.py:10", or the plugin's module
    command: str  # the one command that brings it into canon
    plugin: str = ""  # the distribution, for a plugin's


def defines_fixture(source: str, name: str) -> int:
    """The line at which a module defines a pytest fixture called name, or 0."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and "fixture" in ast.unparse(node.value.func) \
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.lineno  # mocker = pytest.fixture()(_mocker)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for decorator in node.decorator_list:
            if "fixture" not in ast.unparse(decorator):
                continue
            given = next((kw.value.value for kw in getattr(decorator, "keywords", [])
                          if kw.arg == "name" and isinstance(kw.value, ast.Constant)), None)
            if (given or node.name) == name:
                return node.lineno
    return 0


def in_code(repo: GitRepo, commit: str, name: str) -> Definition | None:
    """Where the code's commit defines the fixture: its conftest.py files first, then other files of its test folders."""
    files = repo.files_at(commit)
    conftests = sorted((p for p in files if PurePosixPath(p).name == "conftest.py"), key=lambda p: (p.count("/"), p))
    helpers = sorted(p for p in files if p.endswith(".py") and p not in conftests
                     and any(part in ("tests", "test", "testing") for part in PurePosixPath(p).parts[:-1]))
    for path in [*conftests, *helpers]:
        line = defines_fixture(repo.show(commit, path) or "", name)
        if line:
            also = "" if PurePosixPath(path).name == "conftest.py" else " (a module of its tests; bring in the " \
                "conftest.py that imports it too)"
            return Definition(f"{path}:{line}", f"spec-loop add --from-code {path}{also}")
    return None


def _site_folders(env: ProjectEnv) -> list[Path]:
    if env.key and env.folder is not None:  # the venv is the environment's folder, or a folder in it
        return sorted({*env.folder.glob("lib*/python*/site-packages"), *env.folder.glob("*/lib*/python*/site-packages")})
    return [Path(p) for p in site.getsitepackages()]


def _plugins(env: ProjectEnv) -> list[tuple[str, str, Path]]:
    """(entry point name, module, site folder) of each pytest11 plugin the environment has, with its distribution."""
    found: list[tuple[str, str, Path]] = []
    for folder in _site_folders(env):
        for points in sorted(folder.glob("*.dist-info/entry_points.txt")):
            parser = configparser.ConfigParser(interpolation=None)
            try:
                parser.read_string(points.read_text(encoding="utf-8", errors="replace"))
            except configparser.Error:
                continue
            if parser.has_section("pytest11"):
                dist = points.parent.name.removesuffix(".dist-info").replace("_", "-", 1)
                found += [(f"{name}={dist}", value.split(":", 1)[0].strip(), folder)
                          for name, value in parser.items("pytest11")]
    return found


def in_plugins(env: ProjectEnv, name: str) -> Definition | None:
    """Which pytest plugin of the project's environment defines the fixture (its package's files, read as text)."""
    for point, module, folder in _plugins(env):
        entry, dist = point.split("=", 1)
        base = folder / module.split(".")[0]
        paths = sorted(base.rglob("*.py"))[:MAX_PLUGIN_FILES] if base.is_dir() else [base.with_suffix(".py")]
        for path in paths:
            try:
                line = defines_fixture(path.read_text(encoding="utf-8", errors="replace"), name)
            except OSError:
                continue
            if line:
                return Definition(f"{path.relative_to(folder)}:{line}", f"spec-loop add --plugin {entry}",
                                  plugin=f"{entry} ({dist})")
    return None


def cannot_run(output: str, repo: GitRepo, commit: str, env: ProjectEnv) -> str:
    """Why a conformance test can never pass for want of the project's test set-up, or "" when that is not why."""
    plugin = _NO_PLUGIN.search(output)
    if plugin:
        return (f"canon names the pytest plugin {plugin.group(1)}, which the project's environment cannot import "
                f"({plugin.group(2)}): add the package that provides it to the project's test dependencies, or to "
                "[env] requirements in banach.toml")
    for name in dict.fromkeys(_MISSING.findall(output)):
        found = in_code(repo, commit, name)
        if found:
            return (f"it uses the fixture '{name}', which canon does not define: the project defines it in "
                    f"{found.where} (the code's, at {commit[:12]}), and a conformance run never reads the code's test "
                    f"set-up (the agent writes the code), so the test fails at every commit. Freeze it into canon: "
                    f"{found.command}")
        found = in_plugins(env, name)
        if found:
            return (f"it uses the fixture '{name}', which the pytest plugin {found.plugin} defines ({found.where}); no "
                    "plugin loads in a conformance run unless canon names it, so the test fails at every commit. Name "
                    f"it in canon: {found.command}")
        return (f"it uses the fixture '{name}', which neither canon, the code at {commit[:12]} nor a pytest plugin of "
                "the project's environment defines: define it in a conftest.py in canon (spec-loop add "
                "tests/conftest.py), or add the plugin that provides it to the project's test dependencies")
    return ""


def project_options(repo: GitRepo, commit: str) -> tuple[str, dict[str, str]]:
    """The file of the code that holds its pytest options (as pytest chooses it) and those options, or ("", {})."""
    files = set(repo.files_at(commit))
    for name in PROJECT_FILES:
        if name not in files:
            continue
        try:
            options = section_of(name, repo.show(commit, name) or "")
        except PytestConfigError:
            continue
        if options or name == INI:
            return name, options
    return "", {}


def unfrozen_options(repo: GitRepo, commit: str, canon_ini: str | None) -> str:
    """A note when the project has pytest options that change outcomes and canon's pytest.ini lacks them, or ""."""
    name, options = project_options(repo, commit)
    if not name:
        return ""
    canon = section_of(INI, canon_ini) if canon_ini else {}
    missing = [key for key in options if key in VERDICT_OPTIONS and canon.get(key, "").split() != options[key].split()]
    if not missing:
        return ""
    return (f"note: the project's pytest options in {name} ({', '.join(missing)}) are not canon's, and conformance "
            "tests run with canon's alone. Where a test's outcome depends on them, freeze them into canon: spec-loop "
            f"add --from-code {name}")
