"""`banach doctor`: check the machine and the workspace for what each isolation backend needs, and say what to fix."""
from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass

from shared.cgroups import containment_available
from shared.errors import BanachError
from shared.isolation.sandbox import landlock_abi, landlock_features
from shared.workspace import Workspace


@dataclass(frozen=True)
class Finding:
    ok: bool
    what: str
    fix: str = ""


def examine(ws: Workspace | None) -> list[Finding]:
    findings = []
    abi = landlock_abi()
    findings.append(Finding(abi >= 1, f"Landlock: ABI {abi}" if abi else "Landlock: not available",
                            "" if abi else "use Linux >= 5.13 with landlock in CONFIG_LSM, or isolation.backend = 'users'"))
    if abi:
        for missing in landlock_features()["missing"]:
            findings.append(Finding(False, f"Landlock: {missing}", "a newer kernel enforces it; until then it is not held"))
    from shared.isolation.view import probe

    views_missing = probe()
    in_views = ws is None or ws.config.isolation.reach == "turn"
    findings.append(turn_views(views_missing, configured=in_views))
    if ws is not None:  # what each kind of run that executes agent-written code sees (shared/isolation/kinds.py)
        from shared.isolation.kinds import describe as describe_kinds

        findings += [Finding(True, f"runs: {line}") for line in describe_kinds(ws)]
    findings.append(turn_network(in_view=in_views and not views_missing,
                                 configured=ws is None or ws.config.gateway.network == "gateway-only"))
    lacking = containment_available()
    findings.append(Finding(not lacking, "cgroups: each agent turn and check runs in its own cgroup, killed whole"
                            if not lacking else f"cgroups: {lacking}",
                            "" if not lacking else "run the loops as root or in a delegated cgroup (systemd "
                            "Delegate=yes); until then a process that leaves its session and clears its environment "
                            "can outlive its turn, and process and memory limits are not enforced"))
    try:
        import supervisor  # noqa: F401

        findings.append(Finding(True, "supervisord: installed with Banach"))
    except ImportError:
        findings.append(Finding(False, "supervisord: missing", "pip install supervisor (it is a dependency of banach)"))
    findings.append(Finding(shutil.which("git") is not None, "git: " + (shutil.which("git") or "not on PATH"),
                            "" if shutil.which("git") else "install git"))
    findings.append(Finding(True, f"python: {sys.executable} ({sys.version.split()[0]})"))
    findings += toolchain_findings(ws)
    if ws is None:
        return findings
    backend = ws.config.isolation.backend
    if backend == "none":
        findings.append(Finding(False, "isolation backend 'none': nothing is enforced",
                                "set isolation.backend = 'landlock' (or 'users') in banach.toml"))
    elif backend == "landlock":
        from shared.environment.cache import cache_root
        from shared.isolation.policy import writable_paths

        cache = cache_root(ws, "build")
        table = "; ".join(f"{role}-loop writes only "
                          f"{', '.join(ws.relative(p) for p in writable_paths(ws, role) if p != cache)}"
                          for role in ("spec", "plan", "build"))
        findings.append(Finding(abi >= 1, "isolation backend 'landlock'" + (
            f": {table}; each also writes the machine's environment cache {cache}; none reads another role's key or "
            "the supervisor's credentials (banach -v shows each loop's start-up banner)" if abi
            else ": the kernel cannot enforce it"),
                                "" if abi else "switch to isolation.backend = 'users' and run 'sudo banach setup-users'"))
    else:
        from shared.isolation.users import status as users_status

        for info in users_status(ws).values():
            good = bool(info["exists"] and info["owns_its_stores"])
            findings.append(Finding(good, f"users backend: {info['account']} " + ("owns its stores" if good else
                                    "is missing or does not own its stores"),
                                    "" if good else "run 'sudo banach setup-users -w WS'"))
        from pathlib import Path

        import shared
        from shared.isolation.users import unreachable_ancestors

        # the interpreter (a venv's folder and the Python it links to), Banach's packages, and the workspace
        needed = [Path(sys.executable), Path(sys.executable).absolute().parent / "x", Path(shared.__file__), ws.root / "x"]
        blocked = sorted({folder for path in needed for folder in unreachable_ancestors(path)})
        findings.append(Finding(not blocked, "users backend: the interpreter, Banach and the workspace are reachable by the "
                                "role accounts" if not blocked else
                                f"users backend: the role accounts cannot enter {', '.join(map(str, blocked))}",
                                "" if not blocked else "install Banach where all accounts can read it (a venv under /opt) "
                                "and keep the workspace outside private folders"))
        findings.append(Finding(os.geteuid() == 0, "users backend: 'banach up' must run as root",
                                "" if os.geteuid() == 0 else "run 'sudo banach up'"))
    findings += _environment_findings(ws)
    findings += _agent_findings(ws)
    findings += _gateway_findings(ws)
    if ws.config.cluster.backend == "ray":
        from shared.app.doctor_cluster import cluster_findings

        findings += cluster_findings(ws)
    for store, path in (("canon", ws.canon / ".git"), ("code", ws.code_git)):
        findings.append(Finding(path.exists(), f"{store}: " + ("a git repository" if path.exists() else "not a git repository"),
                                "" if path.exists() else "create the workspace with 'banach init'"))
    return findings


def turn_network(*, in_view: bool, configured: bool) -> Finding:
    """What a turn with a model provider runs, tried for real: the wrapper, in a turn's view where turns get one (as uid
    65534 under root), with its relay to a gateway that answers, and a program inside that talks to it through the
    relay and lists its interfaces. A failure is a problem only where the gateway-only network is configured."""
    from shared.isolation.trial import answering_gateway, try_turn_network

    with answering_gateway() as gateway:
        why = try_turn_network(gateway, view=in_view)
    where = "in a turn's view" + (" as uid 65534" if os.geteuid() == 0 else "") if in_view else "without a view"
    if not why:
        return Finding(True, f"gateway-only network: works {where} (a network namespace with loopback only, where a "
                             "relay carries one port to the gateway's socket)")
    if not configured:
        return Finding(True, f"gateway-only network: not available here ({why}); not configured, so nothing is lost")
    return Finding(False, f"gateway-only network: a program {where} did not reach the gateway: {why}",
                   "the reason says what this machine lacks; until it has it, no turn reaches its model (the agent is "
                   "never run with an open network instead)")


def turn_views(why: str, *, configured: bool) -> Finding:
    """A turn's view (shared/isolation/view.py), as view.probe found it: '' when /bin/true ran in one."""
    pieces = ("user, mount, PID, network, IPC and UTS namespaces, " + ("idmapped mounts, " if os.geteuid() == 0 else "")
              + "open_tree/move_mount, pivot_root")
    if not why:
        return Finding(True, f"turn views: work ({pieces}); a turn started by "
                             + ("root runs as uid 65534" if os.geteuid() == 0 else "you runs as you, without capabilities"))
    if not configured:
        return Finding(True, f"turn views: not available here ({why}); isolation.reach is 'machine', so nothing is lost")
    return Finding(False, f"turn views: cannot work here: {why}",
                   f"they need {pieces}; until the machine has them build-loop refuses to start, unless "
                   "isolation.reach = 'machine' (turns then read the whole machine, and every line says so)")


def _gateway_findings(ws: Workspace) -> list[Finding]:
    """Each gateway provider has a key where only build reads it, and none sits in this shell's environment, where an
    agent of the same user could read it in /proc/PID/environ."""
    from shared.provider_keys import key_file

    findings = []
    used = {ws.config.agents[rung].provider for rung in ws.config.build.rungs if rung in ws.config.agents}
    for name, provider in sorted(ws.config.gateway.providers.items()):
        stored = key_file(ws, name).exists()
        exported = bool(provider.key_env and os.environ.get(provider.key_env))
        if exported:
            findings.append(Finding(False, f"gateway provider {name}: ${provider.key_env} is set in this shell; an agent "
                                    "running as this user can read it in this shell's /proc/PID/environ",
                                    f"store it with 'build-loop key set {name} -w {ws.root}' and unset it (banach up "
                                    "and build-loop keep it out of their own environments, not out of yours)"))
        elif stored or provider.auth == "none":
            findings.append(Finding(True, f"gateway provider {name}: " + (
                f"key in {ws.relative(key_file(ws, name))}" if stored else "no key needed (auth none)")))
        elif name not in used:  # configured for a rung not in use (banach init writes one): not a problem yet
            findings.append(Finding(True, f"gateway provider {name}: no key, and no rung of build.agent or build.ladder "
                                    f"uses it now (build-loop key set {name} stores one when a rung does)"))
        else:
            findings.append(Finding(False, f"gateway provider {name}: no key", f"run 'build-loop key set {name} -w "
                                    f"{ws.root}' (reads it from stdin)" + (f", or export ${provider.key_env} for a "
                                    "single build-loop run" if provider.key_env else "")))
    return findings


MINIMUM = {"node": (20, 0), "go": (1, 16)}  # node: --test-reporter with events per file; go: -overlay, test2json


def _version(program: str) -> tuple[str, tuple[int, ...]]:
    import re
    import subprocess

    argv = [program, "version"] if program.endswith("go") else [program, "--version"]
    try:
        said = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "", ()
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", said)
    return said, tuple(int(part) for part in found.groups() if part) if found else ()


def toolchain_findings(ws: Workspace | None) -> list[Finding]:
    """node and go, with their versions: what conformance tests in those languages run on (shared/measurement/nodetest.py,
    gotest.py). Missing or too old is a problem only when the code is a project of that language."""
    from shared.app.project_kind import detect

    language = detect(ws.code if ws is not None and ws.code.is_dir() else None).language
    needed = {"typescript": "node", "javascript": "node", "go": "go"}.get(language)
    findings = []
    for program, install in (("node", "apt-get install nodejs npm"), ("go", "apt-get install golang-go")):
        path = shutil.which(program)
        said, version = _version(path) if path else ("", ())
        good = bool(path) and version >= MINIMUM[program]
        minimum = ".".join(map(str, MINIMUM[program]))
        what = f"{program}: {path} ({said.splitlines()[0] if said else 'no version'})" if path else f"{program}: not on PATH"
        if program == needed:
            what += f": the code's conformance tests in {language} run on it"
        fix = "" if good else f"{install} (at least {minimum}) for conformance tests in that language"
        findings.append(Finding(good or program != needed, what, fix if program == needed else ""))
    return findings


def _environment_findings(ws: Workspace) -> list[Finding]:
    """What the project's code needs to be measured (shared/environment.py), read from its files at HEAD."""
    from shared.environment import what_it_needs
    from shared.environment.installer import Installer
    from shared.git import is_repo

    if not Installer.available(ws.config.env.tool):
        return [Finding(False, f'environment: [env] tool = "{ws.config.env.tool}", but it is not installed here',
                        "pip install uv (or pip install 'banach[uv]'), or set [env] tool = \"pip\"")]
    if not is_repo(ws.code, ws.code_git):
        return []
    code = ws.code_repo()
    head = code.head()
    if head is None:
        return []
    try:
        return [Finding(True, f"environment: {what_it_needs(ws, code, head)}", "")]
    except BanachError as exc:
        return [Finding(False, f"environment: {exc}", "fix the project's dependency files or [env] in banach.toml")]


def _agent_findings(ws: Workspace) -> list[Finding]:
    """build-loop knows its agents: ask it, as a process (shared never imports a loop)."""
    import json

    from shared.process import Request, run

    outcome = run(Request((sys.executable, "-I", "-m", "build_loop", "check-agent", "--workspace", str(ws.root)),
                          cwd=ws.root, env=dict(os.environ), timeout=180))
    findings = []
    for line in outcome.stdout.splitlines():
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        findings.append(Finding(bool(data["ok"]), str(data["what"]), str(data.get("fix", ""))))
    if not outcome.ok and not findings:
        findings.append(Finding(False, f"agent: the check could not run: {(outcome.stderr.strip().splitlines() or ['?'])[-1]}",
                                "run 'build-loop check-agent' to see why"))
    return findings
