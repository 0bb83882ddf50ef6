"""What the project's files say it needs, read from their contents (never run): its requirements, from pyproject.toml,
setup.cfg, an sdist's egg-info and requirements files, and where its packages are imported from."""
from __future__ import annotations

import configparser
import re
import tomllib
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from shared.errors import BanachError

TEST_EXTRAS = ("test", "tests", "testing", "dev")
REQUIREMENT_FILES = re.compile(r"^(?:requirements(?:[-_.][\w-]+)?\.txt|requirements/[\w.-]+\.txt|"
                               r"(?:test|dev)[-_]requirements\.txt)$")
DEPENDENCY_FILES = re.compile(r"^(?:pyproject\.toml|setup\.cfg|setup\.py|uv\.lock|[\w.-]+\.egg-info/requires\.txt)$")


class ProjectEnvError(BanachError):
    """The project's environment could not be built: the message carries pip's own words."""



def _pyproject(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _from_pyproject(data: dict[str, Any]) -> list[str]:
    project = data.get("project", {})
    found = [str(r) for r in project.get("dependencies", [])]
    extras = project.get("optional-dependencies", {})
    groups = data.get("dependency-groups", {})
    for name in TEST_EXTRAS:
        found += [str(r) for r in extras.get(name, [])]
        found += [str(r) for r in groups.get(name, []) if isinstance(r, str)]
    return found


def _from_setup_cfg(text: str) -> list[str]:
    parser = configparser.ConfigParser()
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    found = parser.get("options", "install_requires", fallback="").splitlines()
    for name in TEST_EXTRAS:
        found += parser.get("options.extras_require", name, fallback="").splitlines()
    return [line.strip() for line in found if line.strip()]


def _from_egg_info(text: str) -> list[str]:
    """requires.txt: the run-time requirements, then `[extra]` sections; the test extras are taken too."""
    found, section = [], ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]").split(":")[0]
        elif line and (not section or section in TEST_EXTRAS):
            found.append(line)
    return found


def _from_requirements(text: str) -> list[str]:
    """Plain requirement lines; options, includes and the project itself (`-e .`, `.`) are left out."""
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith(("-", ".", "/")) and "://" not in line]


def requirements(files: Mapping[str, bytes], extra: tuple[str, ...] = ()) -> list[str]:
    """What the project needs installed to run its tests, from its dependency files (read, never run). Each one the
    code's files name must be a package of the index: no option (`-e`, `--index-url`) and no direct reference
    (`name @ URL`), which would install code from wherever the code points. `extra` ([env] requirements) is the
    operator's and taken as given."""
    found: list[str] = []
    for path, content in sorted(files.items()):
        text = content.decode("utf-8", errors="replace")
        if path == "pyproject.toml":
            named = _from_pyproject(_pyproject(text))
        elif path == "setup.cfg":
            named = _from_setup_cfg(text)
        elif path.endswith(".egg-info/requires.txt") and "/" not in path.removesuffix("/requires.txt"):
            named = _from_egg_info(text)
        elif REQUIREMENT_FILES.match(path):
            named = _from_requirements(text)
        else:
            continue
        found += [_from_the_index(path, requirement) for requirement in named]
    return list(dict.fromkeys([*found, *extra]))


def _from_the_index(path: str, requirement: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        parsed = Requirement(requirement)
    except InvalidRequirement as exc:
        raise ProjectEnvError(f"{path} names {requirement!r}, which is not a requirement ({exc}). Fix {path}") from None
    if parsed.url:
        raise ProjectEnvError(f"{path} names {requirement!r}, a direct reference: the code's files may name packages "
                              "of the package index only, since anything else installs code from where the code "
                              "points. Name the package instead, or put the reference in [env] requirements in "
                              "banach.toml if you mean it")
    return requirement


def import_roots(files: Mapping[str, bytes], tree: list[str], override: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Where the project's packages are imported from: `[env] import_roots`, else what its build or pytest configuration
    says (pytest's pythonpath, setuptools' package-dir or packages.find.where, hatch's wheel packages), else src/ when
    the packages are there and not at the root, else the root."""
    if override:
        return override
    data = _pyproject(files.get("pyproject.toml", b"").decode("utf-8", errors="replace"))
    tool = data.get("tool", {})
    pythonpath = tool.get("pytest", {}).get("ini_options", {}).get("pythonpath")
    if pythonpath:
        return tuple([pythonpath] if isinstance(pythonpath, str) else [str(p) for p in pythonpath])
    setuptools = tool.get("setuptools", {})
    package_dir = setuptools.get("package-dir", {}).get("")
    where = setuptools.get("packages", {}).get("find", {}).get("where") if isinstance(setuptools.get("packages"), dict) else None
    hatch = tool.get("hatch", {}).get("build", {}).get("targets", {}).get("wheel", {}).get("packages", [])
    for candidate in [package_dir, *(where or []), *(str(PurePosixPath(p).parent) for p in hatch)]:
        if candidate and candidate != ".":
            return (str(candidate).strip("/"),)
    top = {PurePosixPath(p).parts[0] for p in tree if p.endswith("/__init__.py") and len(PurePosixPath(p).parts) == 2}
    under_src = any(p.startswith("src/") and p.endswith("/__init__.py") and len(PurePosixPath(p).parts) == 3 for p in tree)
    return ("src",) if under_src and not top - {"tests", "test", "docs"} else ("",)


def is_dependency_file(path: str) -> bool:
    """A file the environment is read from: a change to it may change the environment."""
    return bool(DEPENDENCY_FILES.match(path) or REQUIREMENT_FILES.match(path))


def has_build_files(files: Mapping[str, bytes]) -> bool:
    return any(path in ("pyproject.toml", "setup.py", "setup.cfg") for path in files)


def own_pytest(found: list[str]) -> list[str]:
    """The conformance runner needs pytest in the environment: Banach's version unless the project names one."""
    import pytest

    named = any(re.match(r"^pytest\s*(?:[<>=!~;\[]|$)", r) for r in found)
    return found if named else [*found, f"pytest=={pytest.__version__}"]
