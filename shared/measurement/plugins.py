"""The pytest plugins canon names for its conformance runs, read from canon's own files, never from the code's.

Plugins do not load by themselves in a conformance run (PYTEST_DISABLE_PLUGIN_AUTOLOAD=1): a package the agent adds
to the project's dependencies must not bring one into the measuring process. A plugin loads only when canon names
it, by one of pytest's own two ways:

    pytest.ini at canon's root      [pytest] addopts = -p pytest_mock
    a conftest.py of canon's        pytest_plugins = ["pytest_mock"]

The runner (shared/measurement/testrun.py) imports each one before the code's import roots go on sys.path, so a
module of the code's that is named like the plugin (`pytest_mock.py` in the work tree) is never what loads: the plugin
is the project's environment's. What that environment holds is still chosen by the project's dependency files
(SECURITY.md, what remains possible)."""
from __future__ import annotations

import ast
import configparser
import re
import shlex

INI = "pytest.ini"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def ini_plugins(text: str) -> tuple[str, ...]:
    """The plugins a pytest.ini's addopts names with -p (not the `-p no:NAME` that block one)."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return ()
    if not parser.has_option("pytest", "addopts"):
        return ()
    try:
        args = shlex.split(parser.get("pytest", "addopts"))
    except ValueError:
        return ()
    found: list[str] = []
    for index, arg in enumerate(args):
        if arg == "-p" and index + 1 < len(args):
            found.append(args[index + 1])
        elif arg.startswith("-p") and len(arg) > 2:
            found.append(arg[2:].lstrip("="))
    return tuple(name for name in dict.fromkeys(found) if not name.startswith("no:") and _NAME.match(name))


def conftest_plugins(source: str) -> tuple[str, ...]:
    """The plugins a conftest.py names in a module-level `pytest_plugins = "a"` or `= ["a", "b"]` (literals only)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return ()
    found: list[str] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytest_plugins"
                                                for t in stmt.targets):
            try:
                value = ast.literal_eval(stmt.value)
            except ValueError:
                continue
            found += [value] if isinstance(value, str) else [v for v in value if isinstance(v, str)] \
                if isinstance(value, list | tuple) else []
    return tuple(name for name in dict.fromkeys(found) if _NAME.match(name))


def named(ini_text: str | None, sources: dict[str, str]) -> tuple[str, ...]:
    """Every plugin canon names: its pytest.ini's, then its conftest.py files' (sources: relative path -> text)."""
    names = list(ini_plugins(ini_text or ""))
    for path, text in sorted(sources.items()):
        if path.rsplit("/", 1)[-1] == "conftest.py":
            names += conftest_plugins(text)
    return tuple(dict.fromkeys(names))
