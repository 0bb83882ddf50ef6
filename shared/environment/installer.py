"""Building the project's environment: a venv and its packages, sandboxed, then the project's own METADATA.

    installed = build(ws, folder, python, needs, cache, project)   # by [env] tool: pip or uv

Everything here runs code other people wrote (the packages' build scripts) or the agent did (the project's own
setup.py or backend), so each step runs in a view of its own (kind "environment" in shared/isolation/kinds.py: the
folders it builds into, a copy of the project, the toolchain and the index's local folders; uid 65534 under root),
reaches the package index through Banach's proxy only, and is bounded like a turn: a memory cap, a process cap, and the
time left (Bounds: [env] max_seconds, or the turn's budget when a turn changed the dependency files)."""
from __future__ import annotations

import contextlib
import importlib
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from shared.environment.cache import discard
from shared.environment.files import ProjectEnvError
from shared.export import remove_tree
from shared.isolation.index_proxy import IndexProxy, index_folders, index_hosts
from shared.isolation.kinds import Confine
from shared.process import Limits, Outcome, Request, run
from shared.untrusted import read_untrusted
from shared.workspace import Workspace

METADATA_LIMIT = 1 << 20
STOP_GRACE = 0.5  # seconds between SIGINT, SIGTERM and SIGKILL for a step past its time
MEASURING_STACK = frozenset({"pytest", "pluggy", "iniconfig", "packaging", "exceptiongroup", "tomli", "pygments"})
GO_PROXIES = ("GOPROXY", "GONOPROXY")  # go's module proxy, not an HTTP proxy: kept where the index proxy's settings win
PASSED_THROUGH = ("SSL_CERT_FILE", "SSL_CERT_DIR", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy",
                  "no_proxy")


@dataclass(frozen=True)
class Installer:
    """The tool that makes the venv and installs into it: pip (with `python -m venv`, reading pip's own configuration:
    pip.conf, PIP_*), or uv (reading uv's: uv.toml, UV_*; it never downloads a Python)."""

    tool: str
    uv: str = ""

    @classmethod
    def named(cls, tool: str) -> Installer:
        if tool == "pip":
            return cls("pip")
        found = _uv()
        if not found:
            raise ProjectEnvError('[env] tool = "uv" in banach.toml, but uv is not installed here: `pip install uv`, or '
                                  'tool = "pip"')
        return cls("uv", found)

    @staticmethod
    def available(tool: str) -> bool:
        return tool == "pip" or bool(_uv())

    def venv(self, python: str, folder: Path) -> tuple[str, ...]:
        if self.tool == "uv":
            return (self.uv, "venv", "--quiet", "--python", python, str(folder))
        return (python, "-m", "venv", str(folder))

    def install(self, python: str, needs: list[str]) -> tuple[str, ...]:
        if self.tool == "uv":
            return (self.uv, "pip", "install", "--python", python, *needs)
        return (python, "-m", "pip", "install", "--no-input", *needs)

    def install_alone(self, python: str, source: Path, target: Path) -> tuple[str, ...]:
        """source without its dependencies into target, using no cache."""
        if self.tool == "uv":
            return (self.uv, "pip", "install", "--python", python, "--no-deps", "--no-cache", "--target", str(target),
                    str(source))
        return (python, "-m", "pip", "install", "--no-input", "--no-deps", "--no-cache-dir", "--target", str(target),
                str(source))

    def environment(self, home: Path, cache: Path | None) -> dict[str, str]:
        """HOME and TMPDIR its own, the tool's own settings from ours, and the cache (None: none named here; a step
        that must use no cache says so on its command line)."""
        prefix = "UV_" if self.tool == "uv" else "PIP_"
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "TMPDIR": str(home),
               **{k: v for k, v in os.environ.items() if k.startswith(prefix) or k in PASSED_THROUGH}}
        if self.tool == "uv":
            # copies, never links: the venv shares no file with a cache that later builds write
            env.update({"UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1", "UV_LINK_MODE": "copy"})
            env.pop("UV_CACHE_DIR", None)
            return {**env, "UV_CACHE_DIR": str(cache)} if cache else env
        env.update({"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"})
        env.pop("PIP_CACHE_DIR", None)
        return {**env, "PIP_CACHE_DIR": str(cache)} if cache else env


def _uv() -> str:
    """The uv executable: the one the `uv` package installed beside this interpreter, else one on PATH ("" if none)."""
    try:
        return str(importlib.import_module("uv").find_uv_bin())
    except (ImportError, FileNotFoundError, AttributeError):
        return shutil.which("uv") or ""


@dataclass(frozen=True)
class Bounds:
    """What one build may take: each step's caps (a cgroup of its own: memory, processes, output), and the moment the
    whole build must be done by (time.monotonic()); `why` names that moment for a person ("the turn's budget: ...")."""
    limits: Limits
    deadline: float
    why: str

    @classmethod
    def of(cls, ws: Workspace, budget: float | None = None) -> Bounds:
        """[env]'s caps, and its max_seconds, or the caller's budget when that is sooner (a turn's time left)."""
        config = ws.config.env
        limits = Limits(max_processes=config.max_processes, memory_bytes=config.max_memory_bytes,
                        output_bytes=ws.config.build.max_output_bytes)
        if budget is not None and budget < config.max_seconds:  # a step is stopped in time to end within it
            deadline = time.monotonic() + max(0.0, budget - STOP_GRACE * 2)
            return cls(limits, deadline, f"the turn's budget ({budget:.0f} s were left)")
        return cls(limits, time.monotonic() + config.max_seconds, f"[env] max_seconds ({config.max_seconds:.0f} s)")


def build(ws: Workspace, folder: Path, python: str, needs: list[str], downloads: Path, project: Path | None,
          bounds: Bounds) -> str:
    """A venv and the packages the index has, by [env] tool, each step in a view of its own (a dependency's setup.py
    runs) reaching the package index only, within bounds; then, given project (the code's tree), its metadata
    (_project_metadata), whose result this returns. downloads: the tool's download cache, the workspace's own."""
    installer = Installer.named(ws.config.env.tool)
    building = folder.with_name(folder.name + ".building")
    discard(building, folder.parent)  # a builder's that was killed
    venv, home = building / "venv", building / "home"
    for made in (venv, home, downloads):
        made.mkdir(parents=True, exist_ok=True)
    venv_python = str(venv / "bin" / "python")
    try:
        with _steps(ws, folder.parent, bounds) as steps:
            for step, argv, interpreter in (("venv", installer.venv(python, venv), python),
                                            ("install", installer.install(venv_python, needs), venv_python)):
                outcome = steps.run(step, argv, interpreter, [venv, home, downloads], home,
                                    installer.environment(home, downloads))
                if not outcome.ok:
                    tail = "\n".join((outcome.stdout + outcome.stderr).strip().splitlines()[-25:])
                    raise ProjectEnvError(f"the project's environment could not be built ({installer.tool} {step} "
                                          f"{' '.join(needs)}): exit {outcome.returncode}\n{tail}\n{steps.refusals()}"
                                          "Fix the project's dependency files, or [env] in banach.toml (requirements, "
                                          "python, tool, index_hosts, index_ports)")
            installed = _project_metadata(installer, steps, building, project) if project is not None else ""
    except BaseException:
        discard(building, folder.parent)
        raise
    discard(home, folder.parent)
    remove_tree(folder)
    building.rename(folder)
    return installed


class _Steps:
    """Runs each step of a build in a view of its own (shared/isolation/kinds.py, kind "environment"), within the
    build's bounds, reaching the index through the index proxy (IndexProxy), or, with [env] index_hosts empty, by
    Landlock's port rule alone; under isolation 'none', as the machine does."""

    def __init__(self, ws: Workspace, proxy: IndexProxy | None, bounds: Bounds, read: tuple[Path, ...] = ()) -> None:
        self.ws, self.proxy, self.bounds = ws, proxy, bounds
        self.confine = Confine(ws, "environment", tuple(index_folders()) + read)

    def run(self, step: str, argv: tuple[str, ...], python: str, writable: list[Path], cwd: Path,
            env: dict[str, str]) -> Outcome:
        """The step's outcome; a step stopped by the bounds (its time, its memory, its processes) raises, naming them."""
        if self.proxy is not None:
            env = {**{k: v for k, v in env.items() if "proxy" not in k.lower() or k in GO_PROXIES}, **self.proxy.environment()}
            argv = self.confine(argv, python=python, writable=writable, env=env, relay=self.proxy.relay)
        else:
            argv = self.confine(argv, python=python, writable=writable, env=env, network="open",
                                ports=tuple(self.ws.config.env.index_ports))
        left = self.bounds.deadline - time.monotonic()
        if left <= 0:
            raise ProjectEnvError(f"the project's environment could not be built within {self.bounds.why}: no time "
                                  f"was left for its {step} step (raise build.turn_timeout or [env] max_seconds in "
                                  "banach.toml if it needs more)")
        outcome = run(Request(argv, cwd=cwd, env=env, timeout=left, grace=STOP_GRACE, limits=self.bounds.limits))
        if outcome.timed_out:
            raise ProjectEnvError(f"the project's environment could not be built within {self.bounds.why}: its {step} "
                                  f"step was stopped after {outcome.duration:.0f} s\n{_tail(outcome)}\nIf the "
                                  "dependencies are meant to take that long, raise build.turn_timeout or [env] "
                                  "max_seconds in banach.toml")
        if outcome.capped:
            config = self.ws.config.env
            raise ProjectEnvError(f"the project's environment could not be built within its caps: its {step} step hit "
                                  f"{outcome.capped} ([env] max_memory_bytes = {config.max_memory_bytes}, "
                                  f"max_processes = {config.max_processes} in banach.toml: raise them if the "
                                  f"dependencies' build needs more)\n{_tail(outcome)}")
        return outcome

    def refusals(self) -> str:
        if self.proxy is None or not self.proxy.refused:
            return ""
        asked = ", ".join(dict.fromkeys(self.proxy.refused))
        return (f"It asked for {asked}, which is not the package index: add a host to [env] index_hosts if it is "
                "one of yours.\n")


def _tail(outcome: Outcome, lines: int = 10) -> str:
    return "\n".join((outcome.stdout + outcome.stderr).strip().splitlines()[-lines:])


@contextlib.contextmanager
def _steps(ws: Workspace, short: Path, bounds: Bounds, hosts: set[str] | None = None,
           read: tuple[Path, ...] = ()) -> Iterator[_Steps]:
    """short: a folder with a short path the build cannot write, for the proxy's socket (a unix socket address).
    hosts: the index's (default: [env] index_hosts and pip's and uv's configuration); read: local folders it reads."""
    config = ws.config.env
    if ws.config.isolation.backend == "none" or not config.index_hosts:
        yield _Steps(ws, None, bounds, read)
        return
    with IndexProxy(hosts if hosts is not None else index_hosts(config.index_hosts), config.index_ports, short) as proxy:
        yield _Steps(ws, proxy, bounds, read)


def _project_metadata(installer: Installer, steps: _Steps, building: Path, project: Path) -> str:
    """Install the project (without dependencies) into a folder of its own, then copy only the METADATA of what it
    made into the venv, so that code reading its own distribution's version works. Its setup.py or build backend
    is code the agent may have written: the venv is read-only to it, and no module, script or .pth it wrote lands
    there; it gets no cache either (a poisoned wheel there would be installed by the next build). Returns whether
    that went ("yes", or "no (why)"), which is not a failure of the environment; a step stopped by the build's bounds
    is (steps.run raises)."""
    copy, target, scratch = building / "project", building / "project-install", building / "project-scratch"
    shutil.copytree(project, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    _writable(copy)  # plan's export is read-only, and its build writes beside its sources (egg-info, build/)
    target.mkdir()
    scratch.mkdir()
    venv_python = str(building / "venv" / "bin" / "python")
    argv = installer.install_alone(venv_python, copy, target)
    try:
        outcome = steps.run("metadata", argv, venv_python, [copy, target, scratch], scratch,
                            installer.environment(scratch, None))
        copied = _copy_metadata(target, building / "venv") if outcome.ok else 0
    finally:
        for folder in (copy, target, scratch):
            discard(folder, building.parent)
    last = (outcome.stdout + outcome.stderr).strip().splitlines()[-1:]
    if not outcome.ok:
        return f"no (exit {outcome.returncode}: {last[0] if last else 'no output'})"
    return "yes" if copied else "no (pip made no distribution's metadata)"


def _writable(tree: Path) -> None:
    """Its owner may write every folder and file of tree (the build runs as that owner, or as uid 65534 seeing root's
    files as its own, and is held by its file modes)."""
    for folder, _dirs, names in os.walk(tree):
        os.chmod(folder, 0o755)
        for name in names:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | 0o600)


def _copy_metadata(target: Path, venv: Path) -> int:
    """Each `NAME-VERSION.dist-info/METADATA` in target into the venv, in place of what the index installed under that
    name (a test dependency may have pulled in the project's released version), but never over the measuring stack's
    own (pytest and what it imports); returns how many were copied. target was written by the agent's code, which may
    still be running: each file is opened without following a link and read from what was opened."""
    site = next(iter(sorted(venv.glob("lib/python*/site-packages"))), None)
    if site is None:
        return 0
    have = {_distribution(entry.name): entry for entry in site.glob("*.dist-info")}
    done: set[str] = set()
    copied = 0
    for entry in sorted(target.iterdir()):
        name = _distribution(entry.name)
        if not entry.name.endswith(".dist-info") or name in MEASURING_STACK or name in done:
            continue
        metadata = read_untrusted(entry / "METADATA", METADATA_LIMIT)
        if metadata is None:
            continue
        done.add(name)
        if name in have:
            remove_tree(have[name])
        (site / entry.name).mkdir()
        (site / entry.name / "METADATA").write_bytes(metadata)
        (site / entry.name / "INSTALLER").write_text("banach (the METADATA only; the code is the commit's)\n")
        copied += 1
    return copied


def _distribution(dist_info: str) -> str:
    return re.sub(r"[-_.]+", "-", dist_info.split("-", 1)[0]).lower()
