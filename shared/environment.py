"""The project's environment: which interpreter runs the project's code and tests, with which dependencies, and
where its packages are imported from.

    env = project_env(ws, "plan", repo, commit)   # one entry point, for every role
    env.python    # the interpreter conformance runs and checks use
    env.roots     # the import roots in the code's tree: ("",) for a flat layout, ("src",) for a src layout

What it needs is read from the commit's objects (never a work tree): `[project]` dependencies and the test extras
of pyproject.toml (and PEP 735 groups), setup.cfg's install_requires and test extras, an sdist's
*.egg-info/requires.txt, and requirements files; `[env] requirements` adds to them. A project that needs nothing
beyond pytest runs on Banach's own interpreter, as before. Otherwise a venv is built once per key (the dependency
files, the interpreter, the [env] config) under the state of the role that first needs it (`state/ROLE/env/KEY`; each
role writes only its own state), and the other roles use that one, read-only. It is built sandboxed like a check:
it writes only its folder and a pip cache beside it, reaches TCP only on `[env] index_ports`, and cannot read the
keys. A build that fails is a named failure with pip's words. The project
itself is never installed: only its METADATA is, made by its own build in a folder of its own (the venv read-only to
that code, the agent's); what is measured is the commit's export, first on sys.path from its import roots. The code's
files may name packages of the index only (no options, no direct references).
"""
from __future__ import annotations

import configparser
import hashlib
import json
import os
import re
import shutil
import sys
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from shared.atomic import file_lock, write_json
from shared.errors import BanachError
from shared.export import remove_tree
from shared.git import GitRepo
from shared.process import Request, run
from shared.workspace import LOOP_ROLES, Role, Workspace

TEST_EXTRAS = ("test", "tests", "testing", "dev")
REQUIREMENT_FILES = re.compile(r"^(?:requirements(?:[-_.][\w-]+)?\.txt|requirements/[\w.-]+\.txt|"
                               r"(?:test|dev)[-_]requirements\.txt)$")
DEPENDENCY_FILES = re.compile(r"^(?:pyproject\.toml|setup\.cfg|setup\.py|uv\.lock|[\w.-]+\.egg-info/requires\.txt)$")
BUILD_TIMEOUT = 900.0
MEASURING_STACK = frozenset({"pytest", "pluggy", "iniconfig", "packaging", "exceptiongroup", "tomli", "pygments"})


class ProjectEnvError(BanachError):
    """The project's environment could not be built: the message carries pip's own words."""


@dataclass(frozen=True)
class ProjectEnv:
    python: str
    roots: tuple[str, ...]
    key: str  # "" for Banach's own interpreter
    requirements: tuple[str, ...] = ()
    folder: Path | None = None

    def import_paths(self, code: Path) -> list[str]:
        """The code's import roots as folders, in order (a root of "" is the code's own folder)."""
        return [str(code / root) for root in self.roots]

    def search_path(self, path: str) -> str:
        """PATH with the environment's venv first, so that `python` and the tools it installed are the project's."""
        return str(Path(self.python).parent) + os.pathsep + path if self.key else path

    def describe(self) -> str:
        where = f"venv {self.folder} (key {self.key[:12]})" if self.folder else "Banach's own interpreter"
        roots = ", ".join(root or "." for root in self.roots)
        needs = ", ".join(self.requirements) or "nothing beyond pytest"
        return f"{where}: {self.python}; import roots {roots}; needs {needs}"


OWN = ProjectEnv(sys.executable, ("",), "")  # Banach's own interpreter, the code's root: a project with no needs


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


def _own_pytest(found: list[str]) -> list[str]:
    """The conformance runner needs pytest in the environment: Banach's version unless the project names one."""
    import pytest

    named = any(re.match(r"^pytest\s*(?:[<>=!~;\[]|$)", r) for r in found)
    return found if named else [*found, f"pytest=={pytest.__version__}"]


def _key(files: Mapping[str, bytes], python: str, config: object) -> str:
    digest = hashlib.sha256()
    for path, content in sorted(files.items()):
        digest.update(f"{path}\0{len(content)}\0".encode() + content)
    digest.update(f"\0{python}\0{config!r}".encode())
    return digest.hexdigest()[:24]


def _build(ws: Workspace, folder: Path, python: str, needs: list[str], cache: Path, project: Path | None) -> str:
    """venv + pip install of the packages the index has, sandboxed (a dependency's setup.py runs); then, given
    project (the code's tree), its metadata (_project_metadata), whose result this returns."""
    from shared.isolation.policy import sandbox_argv

    building = folder.with_name(folder.name + ".building")
    remove_tree(building)
    building.mkdir(parents=True)
    cache.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(building), "TMPDIR": str(building),
           "PIP_CACHE_DIR": str(cache), "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1",
           **{k: v for k, v in os.environ.items() if k.startswith("PIP_") and k not in ("PIP_CACHE_DIR",)}}
    ports = tuple(ws.config.env.index_ports)
    venv_python = str(building / "venv" / "bin" / "python")
    steps = [(python, "-m", "venv", str(building / "venv")), (venv_python, "-m", "pip", "install", "--no-input", *needs)]
    for argv in steps:
        outcome = run(Request(sandbox_argv(ws, argv, [building, cache], connect_ports=ports), cwd=building, env=env,
                              timeout=BUILD_TIMEOUT))
        if not outcome.ok:
            tail = "\n".join((outcome.stdout + outcome.stderr).strip().splitlines()[-25:])
            remove_tree(building)
            raise ProjectEnvError(f"the project's environment could not be built ({' '.join(argv[2:4])} "
                                  f"{' '.join(needs)}): exit {outcome.returncode}\n{tail}\nFix the project's "
                                  "dependency files, or [env] in banach.toml (requirements, python, index_ports)")
    installed = _project_metadata(ws, building, project, cache, env, ports) if project is not None else ""
    remove_tree(folder)
    building.rename(folder)
    return installed


def _project_metadata(ws: Workspace, building: Path, project: Path, cache: Path, env: dict[str, str],
                      ports: tuple[int, ...]) -> str:
    """Install the project (without dependencies) into a folder of its own, then copy only the METADATA of what it
    made into the venv, so that code reading its own distribution's version works. Its setup.py or build backend
    is code the agent may have written: the venv is read-only to it, and no module, script or .pth it wrote lands
    there; it gets no pip cache either (a poisoned wheel there would be installed by the next build). Returns
    whether that went ("yes", or "no (why)"), which is not a failure of the environment."""
    from shared.isolation.policy import sandbox_argv

    copy, target, scratch = building / "project", building / "project-install", building / "project-scratch"
    shutil.copytree(project, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    target.mkdir()
    scratch.mkdir()
    venv_python = str(building / "venv" / "bin" / "python")
    argv = (venv_python, "-m", "pip", "install", "--no-input", "--no-deps", "--no-cache-dir", "--target", str(target),
            str(copy))
    own = {**{k: v for k, v in env.items() if k != "PIP_CACHE_DIR"}, "HOME": str(scratch), "TMPDIR": str(scratch)}
    outcome = run(Request(sandbox_argv(ws, argv, [copy, target, scratch], connect_ports=ports), cwd=scratch, env=own,
                          timeout=BUILD_TIMEOUT))
    copied = _copy_metadata(target, building / "venv") if outcome.ok else 0
    for folder in (copy, target, scratch):
        remove_tree(folder)
    last = (outcome.stdout + outcome.stderr).strip().splitlines()[-1:]
    if not outcome.ok:
        return f"no (exit {outcome.returncode}: {last[0] if last else 'no output'})"
    return "yes" if copied else "no (pip made no distribution's metadata)"


def _copy_metadata(target: Path, venv: Path) -> int:
    """Each `NAME-VERSION.dist-info/METADATA` in target (regular files, read without following links) into the venv,
    in place of what the index installed under that name (a test dependency may have pulled in the project's released
    version), but never over the measuring stack's own (pytest and what it imports); returns how many were copied."""
    site = next(iter(sorted(venv.glob("lib/python*/site-packages"))), None)
    if site is None:
        return 0
    have = {_distribution(entry.name): entry for entry in site.glob("*.dist-info")}
    done: set[str] = set()
    copied = 0
    for entry in sorted(target.iterdir()):
        metadata = entry / "METADATA"
        name = _distribution(entry.name)
        if (not entry.name.endswith(".dist-info") or entry.is_symlink() or not entry.is_dir()
                or metadata.is_symlink() or not metadata.is_file() or metadata.stat().st_size > 1 << 20
                or name in MEASURING_STACK or name in done):
            continue
        done.add(name)
        if name in have:
            remove_tree(have[name])
        (site / entry.name).mkdir()
        shutil.copyfile(metadata, site / entry.name / "METADATA")
        (site / entry.name / "INSTALLER").write_text("banach (the METADATA only; the code is the commit's)\n")
        copied += 1
    return copied


def _distribution(dist_info: str) -> str:
    return re.sub(r"[-_.]+", "-", dist_info.split("-", 1)[0]).lower()


@dataclass(frozen=True)
class _Wanted:
    files: dict[str, bytes]
    roots: tuple[str, ...]
    needs: list[str]  # empty: Banach's own interpreter will do
    python: str
    key: str


def _wanted(ws: Workspace, repo: GitRepo, commit: str) -> _Wanted:
    config = ws.config.env
    entries = repo.tree_entries(commit)
    wanted = {path: entry.blob for path, entry in entries.items() if is_dependency_file(path)}
    contents = repo.blobs(sorted(set(wanted.values())))
    files = {path: contents.get(blob, b"") for path, blob in wanted.items()}
    roots = import_roots(files, list(entries), tuple(config.import_roots))
    needs = requirements(files, tuple(config.requirements)) if config.build != "none" else list(config.requirements)
    python = config.python or getattr(sys, "_base_executable", sys.executable)
    if not needs:
        return _Wanted(files, roots, [], sys.executable, "")
    needs = _own_pytest(needs)
    return _Wanted(files, roots, needs, python, _key(files, python, (config.requirements, config.index_ports, needs)))


def _built_by_another(ws: Workspace, role: Role, key: str) -> Path | None:
    """The same environment, complete, in another role's state: read-only to this role, as its own would be to the
    others. The key covers every file the build reads, so whoever built it built the same thing; under the users
    backend another role's state may be closed to this one, which then builds its own."""
    for other in LOOP_ROLES:
        folder = ws.role_dir(other) / "env" / key
        if other == role:
            continue
        try:
            if (folder / "env.json").is_file() and os.access(folder / "venv" / "bin" / "python", os.X_OK):
                return folder
        except OSError:
            continue
    return None


def project_env(ws: Workspace, role: Role, repo: GitRepo, commit: str, tree: Path | None = None) -> ProjectEnv:
    """The environment the code at commit is measured in, built when its key is new (under a lock: lanes and
    passes may ask at once). tree: the commit's files on disk, installed into a new environment for their metadata
    ([env] install_project)."""
    wanted = _wanted(ws, repo, commit)
    if not wanted.key:
        return ProjectEnv(sys.executable, wanted.roots, "")
    folder = ws.role_dir(role) / "env" / wanted.key
    if not (folder / "env.json").is_file():
        built = _built_by_another(ws, role, wanted.key)
        if built is not None:
            return ProjectEnv(str(built / "venv" / "bin" / "python"), wanted.roots, wanted.key, tuple(wanted.needs), built)
    with file_lock(folder.with_name(wanted.key + ".lock"), what="building the project's environment"):
        if not (folder / "env.json").is_file():
            started = time.monotonic()
            project = tree if ws.config.env.install_project and has_build_files(wanted.files) else None
            installed = _build(ws, folder, wanted.python, wanted.needs, ws.role_dir(role) / "env" / "pip-cache", project)
            write_json(folder / "env.json", {"python": wanted.python, "requirements": wanted.needs,
                                             "roots": list(wanted.roots), "project_installed": installed or "not asked",
                                             "built_seconds": round(time.monotonic() - started, 1),
                                             "built_at": time.time()})
    return ProjectEnv(str(folder / "venv" / "bin" / "python"), wanted.roots, wanted.key, tuple(wanted.needs), folder)


def what_it_needs(ws: Workspace, repo: GitRepo, commit: str) -> str:
    """For doctor: what the code at commit needs, where its packages are, and which roles have built it."""
    wanted = _wanted(ws, repo, commit)
    roots = ", ".join(root or "." for root in wanted.roots)
    if not wanted.key:
        return f"the code needs nothing beyond pytest (Banach's own interpreter); import roots {roots}"
    built = [role for role in ("spec", "plan", "build") if (ws.role_dir(role) / "env" / wanted.key / "env.json").is_file()]
    return (f"the code needs {', '.join(wanted.needs)} in a venv from {wanted.python}; import roots {roots}; built for "
            f"{', '.join(built) or 'no role yet (each builds it at its first measurement)'}")


def describe_cached(ws: Workspace, role: Role) -> list[str]:
    """For status and doctor: each environment the role has built, with its age and size."""
    lines = []
    for record in sorted((ws.role_dir(role) / "env").glob("*/env.json")):
        data = json.loads(record.read_text())
        size = sum(p.stat().st_size for p in record.parent.rglob("*") if p.is_file() and not p.is_symlink())
        age = (time.time() - float(data.get("built_at", 0))) / 3600
        lines.append(f"{role} env {record.parent.name[:12]}: {data['python']}, {len(data['requirements'])} "
                     f"requirement(s), built {age:.1f} h ago in {data.get('built_seconds', '?')} s, {size / 2**20:.0f} MiB")
    return lines
