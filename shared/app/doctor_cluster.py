"""`banach doctor` with [cluster] backend = "ray": the cluster as the loops will find it.

    the address answers; this machine has Ray's token; the cluster refuses a client without one (token authentication
    is on); every live node runs the head's Ray, Python and Banach, and has the agent CLIs the ladder names, each
    answering --version there (a task pinned to each node, asking no agent slot)
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from shared.app.doctor import Finding
from shared.errors import BanachError
from shared.workspace import Workspace

PRESET_EXECUTABLES = {"claude": "claude", "codex": "codex", "aider": "aider", "gemini": "gemini", "opencode": "opencode",
                      "pi": "pi", "qwen": "qwen"}


def ladder_executables(ws: Workspace) -> list[str]:
    """The program each rung of the ladder runs (its command's first word, or its preset's executable)."""
    found: list[str] = []
    for rung in ws.config.build.rungs:
        preset = ws.config.agents.get(rung)
        if preset is None or preset.preset == "sim":
            continue
        program = preset.command.split()[0] if preset.command.strip() else PRESET_EXECUTABLES.get(preset.preset, "")
        if program and program not in found:
            found.append(program)
    return found


def node_facts(programs: list[str]) -> dict[str, Any]:
    """On a node: its Ray, Python and Banach, and each program's --version (or why not)."""
    import importlib.metadata

    import ray

    answers: dict[str, str] = {}
    for program in programs:
        path = shutil.which(program) or (program if os.path.isfile(program) else "")
        if not path:
            answers[program] = "MISSING: not on this node's PATH"
            continue
        with tempfile.TemporaryDirectory(prefix="banach-doctor-") as home:
            try:
                said = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, check=False,
                                      stdin=subprocess.DEVNULL, env={**os.environ, "HOME": home}, cwd=home)
                first = (said.stdout.strip() or said.stderr.strip()).splitlines()
                answers[program] = (first[0][:120] if first else "(no output)") if said.returncode == 0 else \
                    f"FAILED: exit {said.returncode}: {(first or ['?'])[-1][:200]}"
            except (OSError, subprocess.TimeoutExpired) as exc:
                answers[program] = f"FAILED: {exc}"
    return {"ray": ray.__version__, "python": sys.version.split()[0], "banach": importlib.metadata.version("banach"),
            "clis": answers}


def cluster_findings(ws: Workspace) -> list[Finding]:
    from shared.ray_pool import ClusterError, RayPool, refuse_open_cluster, token_available

    address = ws.config.cluster.address
    if not address:
        return [Finding(False, "cluster: backend 'ray' with no address", "set [cluster] address = \"HEAD:6379\"")]
    findings: list[Finding] = []
    try:
        import ray
    except ImportError:
        return [Finding(False, "cluster: the ray package is not installed here", "pip install 'banach[cluster]'")]
    from shared.ray_pool import TOKEN_FIX, _check_reachable

    try:
        _check_reachable(address)
        findings.append(Finding(True, f"cluster: {address} answers"))
    except ClusterError as exc:
        return [Finding(False, f"cluster: {exc}", "start the head with `ray start --head`")]
    source = token_available()
    findings.append(Finding(bool(source), f"cluster: this machine's Ray token: {source or 'none'}", "" if source else TOKEN_FIX))
    try:
        refuse_open_cluster(address)
        findings.append(Finding(True, f"cluster: {address} refuses a client without the token (token authentication on)"))
    except ClusterError as exc:
        return [*findings, Finding(False, f"cluster: {exc}", TOKEN_FIX)]
    if not source:
        return findings
    programs = ladder_executables(ws)
    try:
        with tempfile.TemporaryDirectory(prefix="banach-doctor-ray-") as logs, RayPool(address, Path(logs)) as pool:
            nodes = pool.nodes()
            futures = [(node, pool.submit(node_facts, (programs,), cpus=0, agent_slots=0, pin_node=node.id,
                                          fresh_worker=False)) for node in nodes]
            for node, future in futures:
                findings += _node_findings(node, future.result(timeout=180), ray.__version__, programs)
    except (BanachError, TimeoutError) as exc:
        findings.append(Finding(False, f"cluster: could not ask the nodes: {exc}", "see banach doctor's lines above"))
    return findings


def _node_findings(node: Any, facts: dict[str, Any], head_ray: str, programs: list[str]) -> list[Finding]:
    name = f"cluster: {'head' if node.head else 'node'} {node.id[:12]} {node.address}"
    slots = node.resources.get("agent_slot", 0)
    same = facts["ray"] == head_ray
    found = [Finding(same, f"{name}: Ray {facts['ray']}, Python {facts['python']}, Banach {facts['banach']}, "
                           f"{slots:g} agent slots",
                     "" if same else f"install Ray {head_ray} there (the head's; every node must run the same)")]
    for program in programs:
        said = facts["clis"].get(program, "MISSING")
        bad = said.startswith(("MISSING", "FAILED"))
        found.append(Finding(not bad, f"{name}: {program}: {said}",
                             "" if not bad else f"install {program} on that node at the same path (scripts/install_clis.py "
                             "installs the pinned CLIs)"))
    return found
