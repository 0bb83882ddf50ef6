"""`build-loop check-agent` (and `banach doctor` through it): each ladder rung's CLI run with --version through the
same sandbox its turns get, so that a missing or broken agent shows before a turn is spent on it; and the simulated
agent refused on a workspace that is not the bundled example."""
from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from build_loop.agents import ModelRoute, invocation, preset_env, preset_for
from shared.app.simulated import is_bundled_example
from shared.errors import AgentError, IsolationError
from shared.isolation.kinds import turn_view
from shared.isolation.policy import sandbox_argv
from shared.isolation.shims import missing_folder
from shared.isolation.trial import PORT, answering_gateway
from shared.process import Request, run
from shared.workspace import Workspace


@dataclass(frozen=True)
class AgentCheck:
    ok: bool
    what: str
    fix: str = ""


def check_agents(ws: Workspace) -> list[AgentCheck]:
    """Run each ladder rung's CLI with --version through the same sandbox its turns get, so that a missing or
    broken agent shows before a turn is spent on it; and refuse the simulated agent on a real repository."""
    scratch = Path(tempfile.mkdtemp(prefix="banach-agent-check-"))
    with answering_gateway() as gateway:
        try:
            return _check_rungs(ws, scratch, gateway)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def _check_rungs(ws: Workspace, scratch: Path, gateway: Path) -> list[AgentCheck]:
    """Each rung's --version in its turn's view, behind the relay to `gateway` where its turns get one."""
    checks = []
    for rung in dict.fromkeys(ws.config.build.rungs):
        preset = preset_for(ws.config, rung)
        if preset.preset == "sim":
            example = is_bundled_example(ws)
            checks.append(AgentCheck(example, f"agent {rung}: the SIMULATED agent" + (
                " (fine for the bundled example)" if example else ", on a workspace that is not the bundled example: "
                "it only knows the example's reference changes, so every item would stall"),
                "" if example else "set build.agent to a real preset (docs/agents.md shows a working banach.toml "
                "for claude, codex and aider)"))
            continue
        provider = ws.config.gateway.providers.get(preset.provider)
        # --version calls no model: a gateway that only answers 'pong' stands in for build's
        route = ModelRoute(f"http://127.0.0.1:{PORT}", "version-check", provider.wire) if provider else None
        relay = (gateway, PORT) if provider and ws.config.gateway.network == "gateway-only" else None
        try:
            call = invocation(ws.config, rung, scratch / "prompt.md", route=route)
        except AgentError as exc:
            checks.append(AgentCheck(False, f"agent {rung}: {exc}", "fix the preset in banach.toml"))
            continue
        program = shlex.split(preset.command)[0] if preset.command else call.argv[0]
        missing = _missing_files(preset.command, ws.code) if preset.preset == "command" else []
        if missing:  # `python agent.py --version` would pass without the script
            checks.append(AgentCheck(False, f"agent {rung}: its command names {missing[0]}, which does not exist",
                                     f"fix agents.{rung}.command in banach.toml (relative paths start in the work "
                                     "tree)"))
            continue
        env = {key: os.environ[key] for key in ws.config.build.env_allow if key in os.environ}
        env.update({**preset_env(call, scratch), "TMPDIR": str(scratch)})
        (scratch / "home").mkdir(exist_ok=True)
        view = turn_view(ws, (program, "--version"), env, read=(), home=scratch / "home", python=sys.executable)
        try:
            argv = sandbox_argv(ws, (program, "--version"), [scratch, *call.state_paths], view=view, gateway_relay=relay)
        except IsolationError as exc:  # its turns would be refused the same way
            checks.append(AgentCheck(False, f"agent {rung}: no turn can run it: {exc}", "see the reason"))
            continue
        outcome = run(Request(argv, cwd=scratch, env=env, timeout=60))
        said = (outcome.stdout + outcome.stderr).strip().splitlines()
        if outcome.ok:
            checks.append(AgentCheck(True, f"agent {rung}: {program} --version: {said[0] if said else '(no output)'}"))
        else:
            status = "timed out" if outcome.timed_out else f"exit code {outcome.returncode}"
            folder = missing_folder(outcome.stdout + outcome.stderr)
            advice = (f"its turn's view lacks {folder}, which {program} needs; add it to banach.toml's [isolation] "
                      f'section: read_paths = ["{folder}"]' if folder is not None else
                      f"install {program} where build-loop finds it (scripts/install_clis.py installs the pinned "
                      f"CLIs), or fix agents.{rung}.command in banach.toml")
            checks.append(AgentCheck(False, f"agent {rung}: {program} --version failed ({status}): "
                                     f"{said[-1] if said else 'no output'}", advice))
    return checks


def _missing_files(command: str, work_tree: Path) -> list[str]:
    """The words of a command line after its program that name a file (a path, or a script's name) not there."""
    words = shlex.split(command)[1:]
    named = [word for word in words if not word.startswith("-") and "://" not in word
             and ("/" in word or word.endswith((".py", ".sh", ".js")))]
    return [word for word in named if not (work_tree / word).exists()]  # an absolute word replaces work_tree
