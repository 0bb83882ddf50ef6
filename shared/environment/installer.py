"""Building the project's environment: a venv and its packages, sandboxed, then the project's own METADATA.

    installed = build(ws, folder, python, needs, cache, project)

Everything here runs code other people wrote (the packages' build scripts) or the agent did (the project's own
setup.py or backend), so each step is a sandboxed child that writes only where it must."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from shared.environment.files import ProjectEnvError
from shared.export import remove_tree
from shared.process import Request, run
from shared.workspace import Workspace

BUILD_TIMEOUT = 900.0
MEASURING_STACK = frozenset({"pytest", "pluggy", "iniconfig", "packaging", "exceptiongroup", "tomli", "pygments"})


def build(ws: Workspace, folder: Path, python: str, needs: list[str], cache: Path, project: Path | None) -> str:
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
