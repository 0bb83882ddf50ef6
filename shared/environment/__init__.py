"""The project's environment: which interpreter runs the project's code and tests, with which dependencies, and
where its packages are imported from.

    env = project_env(ws, "plan", repo, commit)   # one entry point, for every role
    env.python    # the interpreter conformance runs and checks use
    env.roots     # the import roots in the code's tree: ("",) for a flat layout, ("src",) for a src layout

What it needs is read from the commit's objects (never a work tree), and only what its tests need (needs.py): its
run-time dependencies and its test extra or group or the requirements file its test configuration names, not docs,
lint, typing or release tooling; `[env] requirements` adds to them. A project that needs nothing
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

import hashlib
import json
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from shared.atomic import file_lock, write_json
from shared.environment.files import ProjectEnvError, has_build_files, import_roots, is_dependency_file
from shared.environment.installer import build
from shared.environment.needs import what_tests_need
from shared.git import GitRepo
from shared.workspace import LOOP_ROLES, Role, Workspace

__all__ = ["OWN", "ProjectEnv", "ProjectEnvError", "describe_cached", "import_roots", "is_dependency_file", "project_env",
           "requirements", "what_it_needs"]


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


def requirements(files: Mapping[str, bytes], extra: tuple[str, ...] = ()) -> list[str]:
    """What the project's tests need installed, from its dependency files (needs.what_tests_need), as pip reads it."""
    return what_tests_need(files, extra).requirements


def own_pytest(found: list[str]) -> list[str]:
    """The conformance runner needs pytest in the environment: Banach's version unless the project names one."""
    import re

    import pytest

    named = any(re.match(r"^pytest\s*(?:[<>=!~;\[]|$)", r) for r in found)
    return found if named else [*found, f"pytest=={pytest.__version__}"]



def _key(files: Mapping[str, bytes], python: str, config: object) -> str:
    digest = hashlib.sha256()
    for path, content in sorted(files.items()):
        digest.update(f"{path}\0{len(content)}\0".encode() + content)
    digest.update(f"\0{python}\0{config!r}".encode())
    return digest.hexdigest()[:24]


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
    needs = own_pytest(needs)
    key = _key(files, python, (config.requirements, config.index_ports, config.tool, needs))
    return _Wanted(files, roots, needs, python, key)


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
            cache = ws.role_dir(role) / "env" / f"{ws.config.env.tool}-cache"
            installed = build(ws, folder, wanted.python, wanted.needs, cache, project)
            write_json(folder / "env.json", {"python": wanted.python, "tool": ws.config.env.tool,
                                             "requirements": wanted.needs,
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
    return (f"the code needs {', '.join(wanted.needs)} in a venv from {wanted.python} (made by "
            f"{ws.config.env.tool}); import roots {roots}; built for "
            f"{', '.join(built) or 'no role yet (each builds it at its first measurement)'}")


def describe_cached(ws: Workspace, role: Role) -> list[str]:
    """For status and doctor: each environment the role has built, with its age and size."""
    lines = []
    for record in sorted((ws.role_dir(role) / "env").glob("*/env.json")):
        data = json.loads(record.read_text())
        size = sum(p.stat().st_size for p in record.parent.rglob("*") if p.is_file() and not p.is_symlink())
        age = (time.time() - float(data.get("built_at", 0))) / 3600
        lines.append(f"{role} env {record.parent.name[:12]}: {data['python']}, {len(data['requirements'])} "
                     f"requirement(s), by {data.get('tool', 'pip')}, built {age:.1f} h ago in "
                     f"{data.get('built_seconds', '?')} s, {size / 2**20:.0f} MiB")
    return lines
