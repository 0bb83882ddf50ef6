"""Building the project's environment: a venv and its packages, sandboxed, then the project's own METADATA.

    installed = build(ws, folder, python, needs, cache, project)   # by [env] tool: pip or uv

Everything here runs code other people wrote (the packages' build scripts) or the agent did (the project's own
setup.py or backend), so each step is a sandboxed child that writes only where it must."""
from __future__ import annotations

import contextlib
import importlib
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from shared.environment.files import ProjectEnvError
from shared.export import remove_tree
from shared.isolation.index_proxy import IndexProxy, index_hosts
from shared.process import Limits, Outcome, Request, run
from shared.untrusted import read_untrusted
from shared.workspace import Workspace

BUILD_TIMEOUT = 900.0
METADATA_LIMIT = 1 << 20
MEASURING_STACK = frozenset({"pytest", "pluggy", "iniconfig", "packaging", "exceptiongroup", "tomli", "pygments"})
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
            env.update({"UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"})
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


def build(ws: Workspace, folder: Path, python: str, needs: list[str], cache: Path, project: Path | None) -> str:
    """A venv and the packages the index has, by [env] tool, sandboxed (a dependency's setup.py runs) and reaching
    the package index only; then, given project (the code's tree), its metadata (_project_metadata), whose result
    this returns."""
    installer = Installer.named(ws.config.env.tool)
    building = folder.with_name(folder.name + ".building")
    remove_tree(building)
    building.mkdir(parents=True)
    cache.mkdir(parents=True, exist_ok=True)
    venv_python = str(building / "venv" / "bin" / "python")
    with _network(ws) as network:
        steps = [("venv", installer.venv(python, building / "venv")), ("install", installer.install(venv_python, needs))]
        for step, argv in steps:
            outcome = network.run(argv, [building, cache], building, installer.environment(building, cache))
            if not outcome.ok:
                tail = "\n".join((outcome.stdout + outcome.stderr).strip().splitlines()[-25:])
                remove_tree(building)
                raise ProjectEnvError(f"the project's environment could not be built ({installer.tool} {step} "
                                      f"{' '.join(needs)}): exit {outcome.returncode}\n{tail}\n{network.refusals()}"
                                      "Fix the project's dependency files, or [env] in banach.toml (requirements, "
                                      "python, tool, index_hosts, index_ports)")
        installed = _project_metadata(installer, network, building, project) if project is not None else ""
    remove_tree(folder)
    building.rename(folder)
    return installed


class _Network:
    """How a build step reaches the index: through the index proxy in a network of its own (IndexProxy), or, with
    [env] index_hosts empty, by Landlock's port rule alone; under isolation 'none', as the machine does."""

    def __init__(self, ws: Workspace, proxy: IndexProxy | None) -> None:
        self.ws, self.proxy = ws, proxy

    def run(self, argv: tuple[str, ...], writable: list[Path], cwd: Path, env: dict[str, str]) -> Outcome:
        from shared.isolation.policy import sandbox_argv

        if self.proxy is not None:
            argv = sandbox_argv(self.ws, argv, writable, gateway_relay=self.proxy.relay)
            env = {**{k: v for k, v in env.items() if "proxy" not in k.lower()}, **self.proxy.environment()}
        else:
            argv = sandbox_argv(self.ws, argv, writable, connect_ports=tuple(self.ws.config.env.index_ports))
        contained = Limits()  # no caps, but a cgroup of its own: nothing the step starts outlives it
        return run(Request(argv, cwd=cwd, env=env, timeout=BUILD_TIMEOUT, limits=contained))

    def refusals(self) -> str:
        if self.proxy is None or not self.proxy.refused:
            return ""
        asked = ", ".join(dict.fromkeys(self.proxy.refused))
        return (f"It asked for {asked}, which is not the package index: add a host to [env] index_hosts if it is "
                "one of yours.\n")


@contextlib.contextmanager
def _network(ws: Workspace) -> Iterator[_Network]:
    config = ws.config.env
    if ws.config.isolation.backend == "none" or not config.index_hosts:
        yield _Network(ws, None)
        return
    with IndexProxy(index_hosts(config.index_hosts), config.index_ports) as proxy:
        yield _Network(ws, proxy)


def _project_metadata(installer: Installer, network: _Network, building: Path, project: Path) -> str:
    """Install the project (without dependencies) into a folder of its own, then copy only the METADATA of what it
    made into the venv, so that code reading its own distribution's version works. Its setup.py or build backend
    is code the agent may have written: the venv is read-only to it, and no module, script or .pth it wrote lands
    there; it gets no cache either (a poisoned wheel there would be installed by the next build). Returns whether
    that went ("yes", or "no (why)"), which is not a failure of the environment."""
    copy, target, scratch = building / "project", building / "project-install", building / "project-scratch"
    shutil.copytree(project, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    target.mkdir()
    scratch.mkdir()
    argv = installer.install_alone(str(building / "venv" / "bin" / "python"), copy, target)
    outcome = network.run(argv, [copy, target, scratch], scratch, installer.environment(scratch, None))
    copied = _copy_metadata(target, building / "venv") if outcome.ok else 0
    for folder in (copy, target, scratch):
        remove_tree(folder)
    last = (outcome.stdout + outcome.stderr).strip().splitlines()[-1:]
    if not outcome.ok:
        return f"no (exit {outcome.returncode}: {last[0] if last else 'no output'})"
    return "yes" if copied else "no (pip made no distribution's metadata)"


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
