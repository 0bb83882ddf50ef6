"""What the project's files say, read from their contents (never run): the requirements each file or section names
(pyproject.toml, setup.cfg, an sdist's egg-info, requirements files, tox's configuration), and where its packages
are imported from. Which of them the tests need is decided in needs.py."""
from __future__ import annotations

import configparser
import posixpath
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from shared.errors import BanachError

REQUIREMENT_FILES = re.compile(r"^(?:(?:tests?/)?requirements(?:[-_.][\w-]+)?\.txt|requirements/[\w.-]+\.txt|"
                               r"[\w-]+[-_]requirements\.txt)$")
DEPENDENCY_FILES = re.compile(r"^(?:pyproject\.toml|setup\.cfg|setup\.py|tox\.ini|uv\.lock|[\w.-]+\.egg-info/requires\.txt)$")
_FACTOR = re.compile(r"^[\w{},.!-]+:\s")  # a tox line for some environments only ("py38: mock")


class ProjectEnvError(BanachError):
    """The project's environment could not be built: the message carries pip's own words."""


@dataclass(frozen=True)
class Source:
    """One place that names requirements: a file, or a section of one (an extra, a group). name: what decides its
    purpose (the extra's or group's name, the requirements file's path); includes: requirements files it names with
    `-r`, as paths of the tree."""
    where: str
    name: str
    requirements: tuple[str, ...]
    includes: tuple[str, ...] = ()
    runtime: bool = False  # the project's run-time dependencies: always needed


@dataclass(frozen=True)
class ToxConfig:
    """What tox's [testenv] says its test environment gets: requirement lines, requirements files, extras."""
    where: str
    deps: tuple[str, ...]
    includes: tuple[str, ...]
    extras: tuple[str, ...]


def _pyproject(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _strings(value: object) -> tuple[str, ...]:
    return tuple(str(item) for item in value if isinstance(item, str)) if isinstance(value, list) else ()


def _group(groups: dict[str, Any], name: str, seen: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """A PEP 735 dependency group, with the groups it includes ({include-group = "..."})."""
    found: list[str] = []
    for entry in groups.get(name, []) if isinstance(groups.get(name), list) else []:
        if isinstance(entry, str):
            found.append(entry)
        elif isinstance(entry, dict) and entry.get("include-group") not in seen | {name}:
            found += _group(groups, str(entry.get("include-group")), seen | {name})
    return tuple(found)


def pyproject_sources(text: str) -> list[Source]:
    data = _pyproject(text)
    project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    found = [Source("pyproject.toml [project] dependencies", "", _strings(project.get("dependencies")), runtime=True)]
    extras = project.get("optional-dependencies", {})
    for name in sorted(extras) if isinstance(extras, dict) else []:
        found.append(Source(f"pyproject.toml extra {name!r}", name, _strings(extras[name])))
    groups = data.get("dependency-groups", {})
    for name in sorted(groups) if isinstance(groups, dict) else []:
        found.append(Source(f"pyproject.toml dependency group {name!r}", name, _group(groups, name)))
    tool = data.get("tool", {}) if isinstance(data.get("tool"), dict) else {}
    hatch = tool.get("hatch", {}).get("envs", {}) if isinstance(tool.get("hatch"), dict) else {}
    for name in sorted(hatch) if isinstance(hatch, dict) else []:
        if isinstance(hatch[name], dict):
            found.append(Source(f"pyproject.toml hatch environment {name!r}", name,
                                _strings(hatch[name].get("dependencies")) + _strings(hatch[name].get("extra-dependencies"))))
    pdm = tool.get("pdm", {}).get("dev-dependencies", {}) if isinstance(tool.get("pdm"), dict) else {}
    for name in sorted(pdm) if isinstance(pdm, dict) else []:
        found.append(Source(f"pyproject.toml pdm dev-dependencies {name!r}", name, _strings(pdm[name])))
    return [source for source in found if source.requirements or source.runtime]


def _ini(text: str) -> configparser.ConfigParser | None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    return parser


def _lines(value: str) -> tuple[str, ...]:
    return tuple(line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#"))


def setup_cfg_sources(text: str) -> list[Source]:
    parser = _ini(text)
    if parser is None:
        return []
    found = [Source("setup.cfg install_requires", "", _lines(parser.get("options", "install_requires", fallback="")),
                    runtime=True)]
    if parser.has_section("options.extras_require"):
        for name, value in sorted(parser.items("options.extras_require")):
            found.append(Source(f"setup.cfg extra {name!r}", name, _lines(value)))
    return [source for source in found if source.requirements]


def egg_info_sources(path: str, text: str) -> list[Source]:
    """requires.txt: the run-time requirements, then one `[extra]` (or `[extra:marker]`) section per extra."""
    sections: dict[str, list[str]] = {"": []}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]").split(":")[0]
            sections.setdefault(section, [])
        elif line:
            sections[section].append(line)
    return [Source(f"{path} (run-time)" if not name else f"{path} extra {name!r}", name, tuple(lines), runtime=not name)
            for name, lines in sections.items() if lines]


def requirements_file(path: str, text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A requirements file's plain requirement lines, and the files it includes with -r (as paths of the tree).
    Other options, constraints files and the project itself (`-e .`, `.`) are left out."""
    found, includes = [], []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        include = re.match(r"^(?:-r|--requirement)(?:\s*=\s*|\s+|(?=\S))(\S+)$", line)
        if include:
            includes.append(_relative(path, include.group(1)))
        elif line and not line.startswith(("-", ".", "/")) and "://" not in line:
            found.append(line)
    return tuple(found), tuple(include for include in includes if include)


def _relative(including: str, named: str) -> str:
    """A path named inside a file of the tree, as a path of the tree ("" when it leaves the tree)."""
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(including), named))
    return "" if joined.startswith("../") or joined.startswith("/") or joined == ".." else joined


def tox_config(files: Mapping[str, bytes]) -> ToxConfig | None:
    """The [testenv] of tox.ini, of pyproject.toml's [tool.tox] legacy_tox_ini, or of setup.cfg."""
    candidates = [("tox.ini", files.get("tox.ini")), ("setup.cfg", files.get("setup.cfg"))]
    legacy = _pyproject(files.get("pyproject.toml", b"").decode("utf-8", "replace")).get("tool", {}).get("tox", {})
    if isinstance(legacy, dict) and isinstance(legacy.get("legacy_tox_ini"), str):
        candidates.insert(1, ("pyproject.toml [tool.tox]", legacy["legacy_tox_ini"].encode()))
    for where, content in candidates:
        parser = _ini(content.decode("utf-8", "replace")) if content is not None else None
        if parser is None or not parser.has_section("testenv"):
            continue
        deps, includes = [], []
        for line in _lines(parser.get("testenv", "deps", fallback="")):
            if _FACTOR.match(line) or "{" in line:
                continue  # for some of tox's environments only, or a substitution: not read
            include = re.match(r"^(?:-r|--requirement)\s*=?\s*(\S+)$", line)
            if include:
                includes.append(_relative("tox.ini", include.group(1)))
            elif not line.startswith("-"):
                deps.append(line)
        extras = [word for line in _lines(parser.get("testenv", "extras", fallback=""))
                  for word in re.split(r"[,\s]+", line) if word and not _FACTOR.match(line)]
        return ToxConfig(f"{where} [testenv]", tuple(deps), tuple(i for i in includes if i), tuple(extras))
    return None


def from_the_index(where: str, requirement: str) -> str:
    """requirement, if it names a package of the index: no option and no direct reference (`name @ URL`), which
    would install code from wherever the code points."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        parsed = Requirement(requirement)
    except InvalidRequirement as exc:
        raise ProjectEnvError(f"{where} names {requirement!r}, which is not a requirement ({exc}). Fix {where}") from None
    if parsed.url:
        raise ProjectEnvError(f"{where} names {requirement!r}, a direct reference: the code's files may name packages "
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
