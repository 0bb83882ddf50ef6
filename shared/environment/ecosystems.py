"""The project's environment beyond Python: its npm packages (`npm ci` of its lockfile) and its Go modules
(`go mod download`), built once per machine for each dependency set, as the venv is.

    found = ecosystems.attach(ws, role, files, budget)   # {"node_modules": Path, "go_modules": Path}, as needed

What is needed is read from the commit's files (never run): package.json with package-lock.json (or
npm-shrinkwrap.json) when it names dependencies, go.mod with its go.sum when it requires modules. Each set is keyed by
those files' bytes and the toolchain's version, and built in the machine's cache (cache.py) under the key's lock, by
the same steps as the venv (installer.py): in a view of its own, through Banach's index proxy to the registry's hosts
only ([env] npm_hosts, go_hosts, and the hosts npm's registry setting, GOPROXY and GOSUMDB name), within [env]'s
memory, process and time bounds. Only the dependency files are copied in, never the rest of the project (its .npmrc,
its go.work), and npm runs no lifecycle script (`--ignore-scripts`: neither the project's own, which the agent may
write, nor its dependencies'): a package that needs an install script to work does not work here. Conformance runs
read the result read-only (shared/measurement/nodetest.py, gotest.py).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

from shared.atomic import write_json
from shared.environment.cache import EnvCache, discard, folder_size
from shared.environment.files import ProjectEnvError
from shared.environment.installer import Bounds, _steps
from shared.export import remove_tree
from shared.workspace import Role, Workspace

FORMAT = "banach-eco-1"
NODE_FILES = ("package.json", "package-lock.json", "npm-shrinkwrap.json")
GO_FILES = ("go.mod", "go.sum")
_REQUIRE = re.compile(r"^\s*require\b", re.MULTILINE)


def is_ecosystem_file(path: str) -> bool:
    return path in NODE_FILES or path in GO_FILES


@cache
def _version(program: str) -> str:
    found = shutil.which(program)
    if not found:
        return ""
    argv = [found, "version"] if program == "go" else [found, "--version"]
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _key(kind: str, files: Mapping[str, bytes], toolchain: str) -> str:
    digest = hashlib.sha256(f"{FORMAT}\0{kind}\0{toolchain}".encode())
    for path, content in sorted(files.items()):
        digest.update(f"\0{path}\0{len(content)}\0".encode() + content)
    return f"{kind}-{digest.hexdigest()[:24]}"


def node_needs(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """The npm files an environment is built from, or {} when the project names no dependency."""
    if "package.json" not in files:
        return {}
    try:
        manifest = json.loads(files["package.json"].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ProjectEnvError("package.json is not JSON: the project's npm packages cannot be read from it; fix it "
                              "(npm install validates it)") from None
    named = any(manifest.get(field) for field in ("dependencies", "devDependencies", "optionalDependencies")) \
        if isinstance(manifest, dict) else False
    if not named:
        return {}
    lock = next((name for name in ("npm-shrinkwrap.json", "package-lock.json") if name in files), None)
    if lock is None:
        raise ProjectEnvError("package.json names dependencies but the code has no package-lock.json: Banach installs "
                              "them with `npm ci`, which needs the lockfile; run `npm install` and commit "
                              "package-lock.json")
    return {"package.json": files["package.json"], lock: files[lock]}


def go_needs(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """The Go files an environment is built from, or {} when go.mod requires no module."""
    if "go.mod" not in files or not _REQUIRE.search(files["go.mod"].decode("utf-8", errors="replace")):
        return {}
    return {name: files[name] for name in GO_FILES if name in files}


def described(files: Mapping[str, bytes]) -> str:
    """For doctor: what else the code needs installed (npm packages, Go modules), or ""."""
    try:
        said = [f"its npm packages ({', '.join(node_needs(files))}: npm ci --ignore-scripts)" if node_needs(files) else "",
                f"its Go modules ({', '.join(go_needs(files))}: go mod download)" if go_needs(files) else ""]
    except ProjectEnvError as exc:
        return f"; {exc}"
    said = [part for part in said if part]
    return "; and " + ", ".join(said) + ", built once per machine in its cache" if said else ""


def _npm_registry_hosts(environ: Mapping[str, str]) -> set[str]:
    urls = [environ.get(name, "") for name in ("npm_config_registry", "NPM_CONFIG_REGISTRY")]
    return {urlsplit(url).hostname or "" for url in urls if url.startswith("http")} - {""}


def go_proxy(environ: Mapping[str, str] = os.environ) -> tuple[str, str]:
    """(GOPROXY, GOSUMDB) as the operator has them (their variables, else `go env`)."""
    found = {}
    for name, default in (("GOPROXY", "https://proxy.golang.org,direct"), ("GOSUMDB", "sum.golang.org")):
        value = environ.get(name)
        if value is None and shutil.which("go"):
            value = subprocess.run([shutil.which("go") or "go", "env", name], capture_output=True, text=True,
                                   timeout=60, check=False).stdout.strip()
        found[name] = value or default
    return found["GOPROXY"], found["GOSUMDB"]


def _go_hosts(proxy: str, sumdb: str) -> tuple[set[str], tuple[Path, ...]]:
    """The hosts and local folders GOPROXY and GOSUMDB name."""
    hosts: set[str] = set()
    folders: list[Path] = []
    for entry in re.split(r"[,|]", proxy):
        if entry.startswith("file://"):
            folders.append(Path(urlsplit(entry).path))
        elif entry.startswith("http"):
            hosts.add(urlsplit(entry).hostname or "")
    words = sumdb.split()
    if words and words[0] not in ("off", ""):
        name = words[-1] if len(words) > 1 else words[0]
        hosts.add(urlsplit(name if "://" in name else f"https://{name}").hostname or "")
    return hosts - {""}, tuple(folders)


def attach(ws: Workspace, role: Role, files: Mapping[str, bytes], budget: float | None = None,
           environ: Mapping[str, str] = os.environ) -> dict[str, Path]:
    """The folders the project's npm packages and Go modules are in, built when the machine has none for their key.
    environ: the operator's settings (npm_config_*, GOPROXY, GOSUMDB), read here, never the project's."""
    found: dict[str, Path] = {}
    for kind, needs, toolchain in (("npm", node_needs(files), "node"), ("go", go_needs(files), "go")):
        if not needs:
            continue
        if not shutil.which(toolchain if kind == "go" else "npm"):
            raise ProjectEnvError(f"the code's {', '.join(needs)} need {'go' if kind == 'go' else 'npm'}, which is not "
                                  f"installed here: install it (apt-get install {'golang-go' if kind == 'go' else 'npm'})")
        key = _key(kind, needs, _version(toolchain) + _version("npm" if kind == "npm" else "go"))
        cache_ = EnvCache.of(ws, role)
        folder = cache_.find(key)
        if folder is None or not cache_.hold(folder):
            bounds = Bounds.of(ws, budget)
            with cache_.building(key, bounds.deadline, bounds.why) as ready:
                folder = ready or _build(ws, role, cache_, kind, key, needs, bounds, environ)
            if not cache_.hold(folder):
                raise ProjectEnvError(f"the project's {kind} packages at {folder} were removed as soon as they were "
                                      f"built: another process is pruning {cache_.root}; raise [env] max_cache_bytes")
            cache_.prune()
        found["node_modules" if kind == "npm" else "go_modules"] = folder / ("node_modules" if kind == "npm" else "gomod")
    return found


def _build(ws: Workspace, role: Role, cache_: EnvCache, kind: str, key: str, needs: Mapping[str, bytes],
           bounds: Bounds, environ: Mapping[str, str]) -> Path:
    started = time.monotonic()
    folder = cache_.root / key
    building = folder.with_name(folder.name + ".building")
    discard(building, folder.parent)
    home, project = building / "home", building / "project"
    downloads = ws.role_dir(role) / "env" / f"{kind}-cache"  # the workspace's own, as pip's is
    for made in (home, project, downloads):
        made.mkdir(parents=True, exist_ok=True)
    for name, content in needs.items():
        (project / name).write_bytes(content)
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "TMPDIR": str(home)}
    try:
        if kind == "npm":
            hosts = set(ws.config.env.npm_hosts) | _npm_registry_hosts(environ)
            env = {**base, **{k: v for k, v in environ.items() if k.lower().startswith("npm_config_")},
                   "npm_config_cache": str(downloads), "npm_config_update_notifier": "false", "NODE_OPTIONS": "",
                   "npm_config_fund": "false", "npm_config_audit": "false"}
            argv: tuple[str, ...] = (shutil.which("npm") or "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund",
                                     "--loglevel=error")
            writable, read = [project, home, downloads], tuple[Path, ...]()
        else:
            proxy, sumdb = go_proxy(environ)
            hosts, read = _go_hosts(proxy, sumdb)
            hosts |= set(ws.config.env.go_hosts)
            env = {**base, "GOMODCACHE": str(building / "gomod"), "GOPATH": str(home / "gopath"),
                   "GOCACHE": str(home / "gocache"), "GOFLAGS": "-modcacherw -mod=mod", "GOPROXY": proxy,
                   "GOSUMDB": sumdb, "GOTOOLCHAIN": "local", "GOWORK": "off", "GOENV": "off",
                   **{k: v for k, v in environ.items() if k in ("GOPRIVATE", "GONOSUMDB", "GONOPROXY", "GOINSECURE")}}
            argv = (shutil.which("go") or "go", "mod", "download")
            (building / "gomod").mkdir()
            writable = [project, home, building / "gomod"]
        with _steps(ws, folder.parent, bounds, hosts, read) as steps:
            outcome = steps.run(f"{kind} download", argv, sys.executable, writable, project, env)
            if not outcome.ok:
                tail = "\n".join((outcome.stdout + outcome.stderr).strip().splitlines()[-25:])
                raise ProjectEnvError(f"the project's {'npm packages' if kind == 'npm' else 'Go modules'} could not be "
                                      f"installed ({' '.join(argv[1:])}): exit {outcome.returncode}\n{tail}\n"
                                      f"{steps.refusals()}Fix the code's {', '.join(needs)}, or [env] in banach.toml")
        if kind == "npm":
            (project / "node_modules").rename(building / "node_modules")
        discard(home, folder.parent)
        discard(project, folder.parent)
    except BaseException:
        discard(building, folder.parent)
        raise
    remove_tree(folder)
    building.rename(folder)
    write_json(folder / "env.json", {"tool": argv[0].rsplit("/", 1)[-1] + " " + argv[1], "files": sorted(needs),
                                     "built_seconds": round(time.monotonic() - started, 1), "built_at": time.time(),
                                     "bytes": folder_size(folder), "built_by": {"workspace": str(ws.root), "role": role}})
    return folder
