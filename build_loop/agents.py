"""Agent presets: for each CLI, the documented command line, how the prompt reaches it, where it keeps its own
state, and how it is pointed at a model (directly, or at Banach's gateway with the turn's token). The harness itself
makes no network call for any of them; what a CLI's output says is read in agent_output.py.

Every agent gets the prompt on stdin and in the file named by BANACH_PROMPT_FILE; a preset adds the
flags its CLI needs to run headless, and says where the prompt goes when the CLI does not read stdin.
"""
from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from build_loop.clis import CLIS, TOKEN_ENV
from shared.config import AgentPreset, Config
from shared.errors import AgentError

SIMULATED_LABEL = "SIMULATED AGENT (a scripted stand-in for an LLM)"


@dataclass(frozen=True)
class ModelRoute:
    """Where a turn's CLI reaches its model through Banach's gateway: the gateway's URL, the turn's token (valid for
    that turn only, and only at the gateway), and the wire format of the provider behind it."""

    url: str
    token: str
    wire: str  # anthropic | openai | gemini


@dataclass(frozen=True)
class Invocation:
    argv: tuple[str, ...]
    label: str  # what people are told is running
    state_paths: tuple[Path, ...] = ()  # the CLI's own state, which the sandbox lets it write
    preset: str = ""  # "" for --agent-command
    env: tuple[tuple[str, str], ...] = ()  # what this CLI needs besides build.env_allow: its endpoint, key, switches
    base_url: str = ""  # the endpoint it was pointed at; "" for the CLI's own provider
    route: ModelRoute | None = None  # set when the CLI talks to Banach's gateway
    model: str = ""


# Where a CLI keeps its login, sessions and caches (each CLI class's `state`): a CLI that cannot write there under the
# sandbox fails before it starts; the folders are created before build restricts itself (a CLI that never ran on the
# account has none yet), and nothing else outside the work tree is granted. agents.NAME.state_paths replaces the list.
# The wire formats a `command` preset may take through the gateway: any (its program reads BANACH_MODEL_*).
COMMAND_WIRES = ("anthropic", "openai", "gemini")


def preset_for(config: Config, name: str) -> AgentPreset:
    try:
        return config.agents[name]
    except KeyError:
        raise AgentError(f"no agent preset named '{name}' in banach.toml; defined: {', '.join(sorted(config.agents))}") from None


def _state_patterns(config: Config, name: str) -> tuple[str, ...]:
    preset = preset_for(config, name)
    if preset.state_paths is not None:
        return preset.state_paths
    cli = CLIS.get(preset.preset)
    if cli is None:
        return ()
    if cli.state_in_scratch(direct_endpoint=bool(preset.base_url), routed=bool(preset.provider)):
        return ()  # a fresh config folder in the turn's scratch: see preset_env
    return cli.state


def _expanded(pattern: str) -> Path | None:
    expanded = os.path.expanduser(os.path.expandvars(pattern))
    if "$" in expanded or not expanded.startswith("/"):
        return None  # an unset variable, or ~ with no HOME
    return Path(expanded)


def state_paths(config: Config, name: str) -> tuple[Path, ...]:
    """The existing paths where agent preset `name` keeps its own state, expanded for this process."""
    found = [path.resolve() for path in map(_expanded, _state_patterns(config, name)) if path is not None and path.exists()]
    return tuple(dict.fromkeys(found))


def all_state_paths(config: Config) -> tuple[Path, ...]:
    """What every rung of the ladder may write: build-loop keeps these open for its agents to inherit. Called before
    build restricts itself: a missing state folder (the CLI never ran on this account) is created here, since
    afterwards neither build nor its agent could make it. A path that names a file (*.json) is left alone."""
    for rung in config.build.rungs:
        for path in map(_expanded, _state_patterns(config, rung)):
            if path is not None and not path.exists() and path.suffix != ".json":
                try:
                    path.mkdir(parents=True, mode=0o700)
                except OSError:
                    continue  # not ours to create (a read-only HOME): the CLI says so in its turn
    return tuple(dict.fromkeys(path for rung in config.build.rungs for path in state_paths(config, rung)))


def preset_env(invocation: Invocation, scratch: Path) -> dict[str, str]:
    """The environment a CLI needs besides build.env_allow: its endpoint and key, the switches that make it run
    headless inside Banach's sandbox, and settings that keep its own files out of the work tree, where the fence would
    count them as edits. Pointed at an endpoint, claude, codex and gemini get a fresh config folder in `scratch`
    (with gemini's settings file): they need no login or state in HOME, and nothing of theirs outlives the turn.
    Through the gateway, pi and opencode do too, with a provider config that names the gateway and the turn's token."""
    cli = CLIS.get(invocation.preset)
    env: dict[str, str] = {}
    if cli is not None:
        env.update(cli.env)
        env.update(cli.turn_env(scratch, direct_endpoint=bool(invocation.base_url)))
    route = invocation.route
    if route is not None:
        if cli is not None:
            env.update(cli.route_env(route.url, route.token, route.wire, invocation.model, scratch))
        else:  # any program
            env.update({"BANACH_MODEL_URL": route.url, TOKEN_ENV: route.token, "BANACH_MODEL_WIRE": route.wire})
    env.update(dict(invocation.env))
    return env


def invocation(config: Config, name: str, prompt_file: Path, *, override: str = "",
               route: ModelRoute | None = None) -> Invocation:
    """The argv for one turn. `override` is --agent-command: any program, prompt on stdin. `route` is the gateway,
    for a preset with a provider."""
    if override:
        return Invocation(tuple(shlex.split(override)), f"command: {override}")
    preset = preset_for(config, name)
    if preset.preset == "sim":
        sim = config.sim
        sim_argv = (sys.executable, "-I", "-m", "build_loop.sim_agent", "--seed", str(sim.seed),
                    "--wrong-edit", str(sim.wrong_edit), "--no-edit", str(sim.no_edit),
                    "--out-of-scope", str(sim.out_of_scope), "--tamper", str(sim.tamper), *preset.extra_args)
        return Invocation(sim_argv, SIMULATED_LABEL)
    route = _check_route(name, preset, route)
    if preset.preset == "command":
        if not preset.command:
            raise AgentError(f"agent preset '{name}' is 'command' but has no command; set agents.{name}.command")
        return Invocation((*shlex.split(preset.command), *preset.extra_args), f"command: {preset.command}",
                          state_paths(config, name), "command", _endpoint_env(name, preset), route=route)
    cli = CLIS[preset.preset]
    prompt_mode = cli.prompt
    argv: list[str] = [*(shlex.split(preset.command) if preset.command else [cli.executable]), *cli.flags]
    endpoint = _endpoint_env(name, preset)
    base_url = route.url if route else preset.base_url
    if base_url:
        argv += cli.endpoint_argv(base_url, TOKEN_ENV if route else preset.api_key_env)
    model = cli.model_name(preset.model, route.wire if route else None)
    if model and cli.model_flag:
        argv += [cli.model_flag, model]
    argv += list(preset.extra_args)
    prompt = prompt_file.read_text(encoding="utf-8") if prompt_mode == "arg" or prompt_mode.startswith("flag:") else ""
    if prompt_mode == "stdin-dash":
        argv.append("-")
    elif prompt_mode == "arg":
        argv.append(prompt)
    elif prompt_mode.startswith("flag:"):
        argv += [prompt_mode.split(":", 1)[1], prompt]
    elif prompt_mode.startswith("file-flag:"):
        argv += [prompt_mode.split(":", 1)[1], str(prompt_file)]
    label = f"{preset.preset}{' ' + preset.model if preset.model else ''}"
    if route is not None:
        label += f" via gateway ({preset.provider}{' -> ' + preset.upstream_model if preset.upstream_model else ''})"
    return Invocation(tuple(argv), label, state_paths(config, name), preset.preset, endpoint, base_url, route,
                      preset.model)


def _check_route(name: str, preset: AgentPreset, route: ModelRoute | None) -> ModelRoute | None:
    if not preset.provider:
        return None
    cli = CLIS.get(preset.preset)
    wires = cli.wires if cli is not None else COMMAND_WIRES if preset.preset == "command" else ()
    if not wires:
        raise AgentError(f"agents.{name}.provider: preset '{preset.preset}' cannot be pointed at Banach's gateway; "
                         "use base_url/api_key_env, or preset 'command' with BANACH_MODEL_URL and BANACH_MODEL_TOKEN")
    if route is None:
        raise AgentError(f"agents.{name} talks to the model through Banach's gateway, which is not running")
    if route.wire not in wires:
        raise AgentError(f"agents.{name}: preset '{preset.preset}' speaks {' or '.join(wires)}, but provider "
                         f"'{preset.provider}' is {route.wire}; pick a provider of a wire this CLI speaks")
    if not preset.model and cli is not None and cli.needs_model:
        raise AgentError(f"agents.{name}.model: {preset.preset} needs a model name to ask the gateway for")
    return route


def _endpoint_env(name: str, preset: AgentPreset) -> tuple[tuple[str, str], ...]:
    """The preset's endpoint and key as the CLI reads them, then its `env`."""
    env: dict[str, str] = {}
    cli = CLIS.get(preset.preset)
    if preset.base_url:
        if cli is None or not cli.takes_base_url():
            raise AgentError(f"agents.{name}.base_url: preset '{preset.preset}' takes its endpoint from its own config, "
                             "not from base_url; see docs/agents.md for how to point it at a server, or use provider "
                             "(Banach's gateway), which works for every CLI")
        if cli.base_url_env:
            env[cli.base_url_env] = preset.base_url
    if preset.api_key_env:
        key = os.environ.get(preset.api_key_env)
        if not key:
            raise AgentError(f"agents.{name}.api_key_env names {preset.api_key_env}, which is not set in build-loop's "
                             f"environment; export it before starting build-loop, or clear api_key_env")
        env[preset.api_key_env] = key
        if cli is not None and cli.key_env:
            env[cli.key_env] = key
    env.update(preset.env)
    return tuple(env.items())
