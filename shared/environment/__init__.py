"""The project's environment: which interpreter runs the project's code and tests, with which dependencies, and
where its packages are imported from.

    env = project_env(ws, "plan", repo, commit)   # one entry point, for every role
    env.python    # the interpreter conformance runs and checks use
    env.roots     # the import roots in the code's tree: ("",) for a flat layout, ("src",) for a src layout

What it needs is read from the commit's objects (never a work tree), and only what its tests need (needs.py): its
run-time dependencies and its test extra or group or the requirements file its test configuration names, not docs,
lint, typing or release tooling; `[env] requirements` adds to them. A project that needs nothing beyond pytest runs on
Banach's own interpreter, as before. Otherwise a venv is built once per machine for its key (every dependency file,
the interpreter, the [env] settings that change what is built) in the machine's cache (cache.py), used read-only by
every workspace and role there, and pruned by age and size. Its build runs in views of its own (installer.py),
bounded like a turn: a step's memory and processes are capped, and the whole build gets [env] max_seconds, or what is
left of the turn whose change needs it (`budget`). A build that fails is a named failure with pip's words. The project
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

from shared.atomic import write_json
from shared.environment import ecosystems
from shared.environment.cache import EnvCache, cache_base, folder_size
from shared.environment.files import ProjectEnvError, has_build_files, import_roots
from shared.environment.files import is_dependency_file as _python_dependency
from shared.environment.installer import Bounds, build
from shared.environment.needs import Needs, what_tests_need
from shared.git import GitRepo
from shared.workspace import LOOP_ROLES, Role, Workspace

__all__ = ["OWN", "ProjectEnv", "ProjectEnvError", "describe", "import_roots", "is_dependency_file", "project_env",
           "requirements", "what_it_needs"]

FORMAT = "banach-env-2"  # in every key: a cache made by an older layout is never taken for this one's
RUNNER = "Banach's conformance runner (pytest, as Banach runs it)"


@dataclass(frozen=True)
class ProjectEnv:
    python: str
    roots: tuple[str, ...]
    key: str  # "" for Banach's own interpreter
    requirements: tuple[str, ...] = ()
    folder: Path | None = None
    node_modules: Path | None = None  # the project's npm packages (`npm ci` of its lockfile), ecosystems.py
    go_modules: Path | None = None  # its Go module cache (`go mod download`), ecosystems.py

    def import_paths(self, code: Path) -> list[str]:
        """The code's import roots as folders, in order (a root of "" is the code's own folder)."""
        return [str(code / root) for root in self.roots]

    def search_path(self, path: str) -> str:
        """PATH with the environment's venv first, so that `python` and the tools it installed are the project's."""
        return str(Path(self.python).parent) + os.pathsep + path if self.key else path


OWN = ProjectEnv(sys.executable, ("",), "")  # Banach's own interpreter, the code's root: a project with no needs


def is_dependency_file(path: str) -> bool:
    """A file the environment is read from (Python's, npm's or Go's): a change to it may change the environment."""
    return _python_dependency(path) or ecosystems.is_ecosystem_file(path)


def requirements(files: Mapping[str, bytes], extra: tuple[str, ...] = ()) -> list[str]:
    """What the project's tests need installed, from its dependency files (needs.what_tests_need), as pip reads it."""
    return what_tests_need(files, extra).requirements


def _key(files: Mapping[str, bytes], python: str, config: object) -> str:
    digest = hashlib.sha256(FORMAT.encode())
    for path, content in sorted(files.items()):
        digest.update(f"{path}\0{len(content)}\0".encode() + content)
    digest.update(f"\0{python}\0{config!r}".encode())
    return digest.hexdigest()[:24]


@dataclass(frozen=True)
class _Wanted:
    files: dict[str, bytes]
    roots: tuple[str, ...]
    needs: Needs  # nothing named: Banach's own interpreter will do
    python: str
    key: str
    ecosystem: dict[str, bytes]  # npm's and Go's files at the code's root (shared/environment/ecosystems.py)


def _with_pytest(needs: Needs) -> Needs:
    """The conformance runner needs pytest in the environment: Banach's version unless the project names one."""
    import re

    import pytest

    named = any(re.match(r"^pytest\s*(?:[<>=!~;\[]|$)", r) for r in needs.requirements)
    return needs if named else needs.adding(f"pytest=={pytest.__version__}", RUNNER)


def _wanted(ws: Workspace, repo: GitRepo, commit: str) -> _Wanted:
    config = ws.config.env
    entries = repo.tree_entries(commit)
    wanted = {path: entry.blob for path, entry in entries.items() if is_dependency_file(path)}
    contents = repo.blobs(sorted(set(wanted.values())))
    ecosystem = {path: contents.get(blob, b"") for path, blob in wanted.items() if ecosystems.is_ecosystem_file(path)}
    files = {path: contents.get(blob, b"") for path, blob in wanted.items() if _python_dependency(path)}
    roots = import_roots(files, list(entries), tuple(config.import_roots))
    if config.build == "none":
        needs = Needs(tuple((requirement, "[env] requirements in banach.toml") for requirement in config.requirements),
                      (("the project's files", "[env] build = \"none\""),))
    else:
        needs = what_tests_need(files, tuple(config.requirements))
    python = config.python or getattr(sys, "_base_executable", sys.executable)
    if not needs.named:
        return _Wanted(files, roots, needs, sys.executable, "", ecosystem)
    needs = _with_pytest(needs)
    key = _key(files, python, (config.requirements, config.index_ports, sorted(config.index_hosts), config.tool,
                               config.install_project, needs.requirements))
    return _Wanted(files, roots, needs, python, key, ecosystem)


def project_env(ws: Workspace, role: Role, repo: GitRepo, commit: str, tree: Path | None = None, *,
                budget: float | None = None) -> ProjectEnv:
    """The environment the code at commit is measured in, built when the machine has none for its key (under the key's
    lock: lanes, passes and other workspaces may ask at once). tree: the commit's files on disk, installed into a new
    environment for their metadata ([env] install_project). budget: seconds the build may take at most (what is left
    of a turn), else [env] max_seconds."""
    wanted = _wanted(ws, repo, commit)
    started = time.monotonic()
    others = ecosystems.attach(ws, role, wanted.ecosystem, budget)  # npm packages, Go modules: {} when none
    if budget is not None:
        budget = max(0.0, budget - (time.monotonic() - started))
    if not wanted.key:
        _remember(ws, role, wanted, None)
        return ProjectEnv(sys.executable, wanted.roots, "", node_modules=others.get("node_modules"),
                          go_modules=others.get("go_modules"))
    cache = EnvCache.of(ws, role)
    folder = cache.find(wanted.key)
    if folder is None or not cache.hold(folder):
        bounds = Bounds.of(ws, budget)
        with cache.building(wanted.key, bounds.deadline, bounds.why) as found:
            folder = found or _build(ws, role, cache, wanted, tree, bounds, commit)
        if not cache.hold(folder):
            raise ProjectEnvError(f"the project's environment {folder} was removed as soon as it was built: another "
                                  f"process is pruning {cache.root}; raise [env] max_cache_bytes or keep")
        cache.prune()
    _remember(ws, role, wanted, folder)
    return ProjectEnv(str(folder / "venv" / "bin" / "python"), wanted.roots, wanted.key, tuple(wanted.needs.requirements),
                      folder, node_modules=others.get("node_modules"), go_modules=others.get("go_modules"))


def _build(ws: Workspace, role: Role, cache: EnvCache, wanted: _Wanted, tree: Path | None, bounds: Bounds,
           commit: str) -> Path:
    started = time.monotonic()
    folder = cache.root / wanted.key
    project = tree if ws.config.env.install_project and has_build_files(wanted.files) else None
    downloads = ws.role_dir(role) / "env" / f"{ws.config.env.tool}-cache"  # the workspace's own: see SECURITY.md
    installed = build(ws, folder, wanted.python, wanted.needs.requirements, downloads, project, bounds)
    write_json(folder / "env.json", {
        "python": wanted.python, "tool": ws.config.env.tool, "requirements": [list(pair) for pair in wanted.needs.named],
        "left_out": [list(pair) for pair in wanted.needs.left_out], "project_installed": installed or "not asked",
        "built_seconds": round(time.monotonic() - started, 1), "built_at": time.time(), "bytes": folder_size(folder),
        "built_by": {"workspace": str(ws.root), "role": role, "commit": commit}})
    return folder


def _remember(ws: Workspace, role: Role, wanted: _Wanted, folder: Path | None) -> None:
    """What this role measures in now, for status: state/ROLE/env/current.json, written when it changes."""
    record = {"key": wanted.key, "folder": str(folder) if folder else "", "python": wanted.python,
              "requirements": [list(pair) for pair in wanted.needs.named],
              "left_out": [list(pair) for pair in wanted.needs.left_out]}
    path = ws.role_dir(role) / "env" / "current.json"
    try:
        if json.loads(path.read_text()) == record:
            return
    except (OSError, ValueError):
        pass
    write_json(path, record)


def _needs_text(named: list[list[str]], left_out: list[list[str]]) -> str:
    said = "; ".join(f"{requirement} <- {where}" for requirement, where in named)
    if left_out:
        said += "; not installed: " + "; ".join(f"{where} ({why})" for where, why in left_out)
    return said


def what_it_needs(ws: Workspace, repo: GitRepo, commit: str) -> str:
    """For doctor: what the code at commit needs and why, where its environment is, and whether the machine has it."""
    wanted = _wanted(ws, repo, commit)
    roots = ", ".join(root or "." for root in wanted.roots)
    others = ecosystems.described(wanted.ecosystem)
    if not wanted.key:
        return f"the code needs nothing beyond pytest (Banach's own interpreter); import roots {roots}" + others
    folder = EnvCache.of(ws, "plan").find(wanted.key)
    where = (f"built in the machine's cache at {folder}" if folder else
             f"not built yet (the first role to measure builds it in {EnvCache.of(ws, 'plan').root})")
    named = [list(pair) for pair in wanted.needs.named]
    return (f"the code needs {_needs_text(named, [list(pair) for pair in wanted.needs.left_out])}; in a venv from "
            f"{wanted.python} (made by {ws.config.env.tool}), {where}; import roots {roots}" + others)


def describe(ws: Workspace) -> list[str]:
    """For status: what each role measures in, what was installed and why, and the machine's cache."""
    lines: list[str] = []
    seen: dict[str, list[str]] = {}
    records: dict[str, dict[str, object]] = {}
    for role in LOOP_ROLES:
        try:
            record = json.loads((ws.role_dir(role) / "env" / "current.json").read_text())
        except (OSError, ValueError):
            continue
        seen.setdefault(str(record.get("key", "")), []).append(role)
        records[str(record.get("key", ""))] = record
    for key, roles in seen.items():
        record = records[key]
        if not key:
            lines.append(f"{', '.join(roles)}: Banach's own interpreter (the code needs nothing beyond pytest)")
            continue
        folder = Path(str(record["folder"]))
        state = "" if (folder / "env.json").is_file() else " (since pruned: built again when next needed)"
        lines.append(f"{', '.join(roles)}: venv {folder}{state}; "
                     + _needs_text(record.get("requirements", []), record.get("left_out", [])))  # type: ignore[arg-type]
    entries = EnvCache.of(ws, "plan").entries()
    config = ws.config.env
    if entries or any(seen):  # a key of "" is Banach's own interpreter, which needs no cache
        lines.append(f"cache {cache_base(ws)}: {len(entries)} environment(s), "
                     f"{sum(entry.size for entry in entries) / 2**20:.0f} MiB of {config.max_cache_bytes / 2**20:.0f} MiB "
                     f"([env] max_cache_bytes); keeps the last {config.keep} used, removes others unused for "
                     f"{config.max_age_days:g} days")
    return lines
