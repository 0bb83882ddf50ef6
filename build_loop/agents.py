"""Agent presets: for each CLI, the documented command line, how the prompt reaches it, where it keeps its own
state, and how it is pointed at a model (directly, or at Banach's gateway with the turn's token). The harness itself
makes no network call for any of them; what a CLI's output says is read in agent_output.py.

Every agent gets the prompt on stdin and in the file named by BANACH_PROMPT_FILE; a preset adds the
flags its CLI needs to run headless, and says where the prompt goes when the CLI does not read stdin.
"""
from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

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


# Each: (executable, flags before the prompt, how the prompt is passed: "stdin" | "arg" | "file-flag:<flag>")
_PRESETS: dict[str, tuple[str, tuple[str, ...], str, str]] = {
    # Claude Code, print mode: `claude -p` reads the prompt from stdin; JSON output carries total_cost_usd.
    # --dangerously-skip-permissions: no approval prompts, Banach is the sandbox (as root claude also needs
    # IS_SANDBOX=1, see _CLI_ENV).
    "claude": ("claude", ("-p", "--output-format", "json", "--dangerously-skip-permissions"), "stdin", "--model"),
    # Codex CLI: `codex exec` runs non-interactively ('-' reads the prompt from stdin); --ephemeral keeps no session
    # files. Its own sandbox (bubblewrap) cannot start inside Landlock and every tool call would fail while codex exits
    # 0: --dangerously-bypass-approvals-and-sandbox is its documented switch for "externally sandboxed".
    "codex": ("codex", ("exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", "--ephemeral"),
              "stdin-dash", "--model"),
    # Aider: one message from a file, no prompts. --no-git: the governor owns git (aider would otherwise `git init`
    # a work tree whose git directory lives elsewhere, commit, and edit .gitignore), and with no repository aider
    # keeps no repo-map cache (.aider.tags.cache.v*) in the work tree. No update check, release notes, model
    # warnings or analytics prompt, which would wait on a person or reach the network; no shell commands, since
    # the governor runs the checks. Edits in aider's text format: "whole" for a model aider does not know, its
    # own choice (diff, udiff) for one it does.
    "aider": ("aider", ("--yes-always", "--no-git", "--no-stream", "--no-pretty", "--no-fancy-input", "--no-check-update",
                        "--no-show-release-notes", "--no-show-model-warnings", "--no-analytics",
                        "--no-suggest-shell-commands", "--no-detect-urls"),
              "file-flag:--message-file",
              "--model"),
    # Gemini CLI: a piped stdin is a headless run with that prompt (-p as well would send it twice); --yolo approves
    # tool calls, which gemini honours only in a trusted folder (GEMINI_CLI_TRUST_WORKSPACE, see _CLI_ENV).
    "gemini": ("gemini", ("--yolo", "--output-format", "json"), "stdin", "--model"),
    # opencode: `opencode run` reads a piped stdin as the message (an argument too would send it twice). --title:
    # without one, opencode sends the prompt in a second request to name the session. opencode retries a 429
    # without end and says nothing; --print-logs at ERROR puts each "Rate limit exceeded" on stderr, so a turn
    # that ends on the budget with those lines reads as rate limited.
    "opencode": ("opencode", ("run", "--title", "banach", "--print-logs", "--log-level", "ERROR"), "stdin", "--model"),
    # Qwen Code: a piped stdin is the prompt (a positional prompt as well would be appended: twice); --yolo approves
    # tool calls; the OpenAI-compatible auth takes its endpoint from --openai-base-url and its key from OPENAI_API_KEY.
    "qwen": ("qwen", ("--yolo", "--auth-type", "openai", "--output-format", "json"), "stdin", "--model"),
    # pi: print mode reads the prompt from stdin; --no-session keeps no session file; --offline: no update or
    # package checks at startup. The model is "provider/id", the provider from ~/.pi/agent/models.json or built in.
    "pi": ("pi", ("-p", "--no-session", "--offline"), "stdin", "--model"),
}

# Where each CLI keeps its login, sessions and caches, as its documentation gives them. A CLI that cannot write
# there under the sandbox fails before it starts; the folders are created before build restricts itself (a CLI that
# never ran on the account has none yet), and nothing else outside the work tree is granted. agents.NAME.state_paths
# replaces the list. A preset with base_url among _SCRATCH_HOME keeps its state in the turn's scratch instead.
STATE_PATHS: dict[str, tuple[str, ...]] = {
    "claude": ("$CLAUDE_CONFIG_DIR", "~/.claude"),  # with CLAUDE_CONFIG_DIR set (see preset_env) .claude.json is in it
    "codex": ("$CODEX_HOME", "~/.codex"),
    "aider": ("~/.aider",),
    "gemini": ("~/.gemini",),
    "opencode": ("~/.local/share/opencode", "~/.local/state/opencode", "~/.config/opencode", "~/.cache/opencode"),
    "pi": ("~/.pi",),
    "qwen": ("~/.qwen",),
}

# What each CLI needs on every turn, base_url or not.
_CLI_ENV: dict[str, dict[str, str]] = {
    # As root, claude refuses --dangerously-skip-permissions unless IS_SANDBOX=1 (or CLAUDE_CODE_BUBBLEWRAP) says it
    # runs in a sandbox, which under Banach it does. No auto-update, telemetry or other traffic besides the model.
    # Two retries, not ten: a 429 is Banach's to wait out (with ten, claude spends minutes before it exits 1).
    "claude": {"IS_SANDBOX": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "CLAUDE_CODE_MAX_RETRIES": "2"},
    # Headless gemini turns --yolo off and exits 55 in a folder it does not trust. The work tree is the agent's to
    # write anyway, and what runs in it runs inside Banach's sandbox.
    "gemini": {"GEMINI_CLI_TRUST_WORKSPACE": "true"},
    "qwen": {"QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"},
    # no models.dev catalogue fetched at start (the network may be gateway-only), no self-update mid-turn
    "opencode": {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"},
}
_BASE_URL_ENV = {"claude": "ANTHROPIC_BASE_URL", "gemini": "GOOGLE_GEMINI_BASE_URL"}
_BASE_URL_FLAG = {"qwen": "--openai-base-url"}
_KEY_ENV = {"claude": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY", "qwen": "OPENAI_API_KEY"}
# With a base_url these run with their config folder in the turn's scratch, named by this variable.
_SCRATCH_HOME = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME", "gemini": "GEMINI_CLI_HOME"}
# Through the gateway these keep all their state in the turn's scratch too (pi's agent folder, opencode's XDG folders).
_ROUTED_SCRATCH = {*_SCRATCH_HOME, "pi", "opencode"}
# The wire formats each CLI can speak to the gateway.
ROUTE_WIRES: dict[str, tuple[str, ...]] = {
    "claude": ("anthropic",), "codex": ("openai",), "gemini": ("gemini",), "qwen": ("openai",),
    "opencode": ("openai", "anthropic"), "pi": ("openai", "anthropic"), "aider": ("openai", "anthropic"),
    "command": ("anthropic", "openai", "gemini"),
}
TOKEN_ENV = "BANACH_MODEL_TOKEN"  # where a routed CLI whose config names a variable finds the turn's token

def preset_for(config: Config, name: str) -> AgentPreset:
    try:
        return config.agents[name]
    except KeyError:
        raise AgentError(f"no agent preset named '{name}' in banach.toml; defined: {', '.join(sorted(config.agents))}") from None


def _state_patterns(config: Config, name: str) -> tuple[str, ...]:
    preset = preset_for(config, name)
    if preset.state_paths is not None:
        return preset.state_paths
    if (preset.base_url and preset.preset in _SCRATCH_HOME) or (preset.provider and preset.preset in _ROUTED_SCRATCH):
        return ()  # a fresh config folder in the turn's scratch: see preset_env
    return STATE_PATHS.get(preset.preset, ())


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
    count them as edits. With a base_url, claude, codex and gemini get a fresh config folder in `scratch` (created
    here, with gemini's settings file): they need no login or state in HOME, and nothing of theirs outlives the turn.
    Through the gateway, pi and opencode do too, with a provider config that names the gateway and the turn's token."""
    env = dict(_CLI_ENV.get(invocation.preset, {}))
    if invocation.preset == "aider":
        env.update({"AIDER_CHAT_HISTORY_FILE": str(scratch / ".aider.chat.history.md"),
                    "AIDER_INPUT_HISTORY_FILE": str(scratch / ".aider.input.history")})
    if invocation.preset == "claude" and not invocation.base_url:
        # claude writes ~/.claude.json by renaming a temporary file in HOME, which only a writable HOME allows; with
        # CLAUDE_CONFIG_DIR set it keeps that file in the (granted) config folder instead.
        env["CLAUDE_CONFIG_DIR"] = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~/.claude")
    if invocation.base_url and invocation.preset in _SCRATCH_HOME:
        home = scratch / f"{invocation.preset}-home"
        home.mkdir(parents=True, exist_ok=True)
        env[_SCRATCH_HOME[invocation.preset]] = str(home)
        if invocation.preset == "gemini":
            # With GOOGLE_GEMINI_BASE_URL gemini picks its "gateway" auth, which its headless check rejects ("Invalid
            # auth method selected.", exit 41); named in its user settings, the key auth uses the base URL too. Two
            # attempts, not ten: a limit is Banach's to wait out. No usage statistics: they would go to Google.
            (home / ".gemini").mkdir(exist_ok=True)
            settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"maxAttempts": 2},
                        "privacy": {"usageStatisticsEnabled": False}}
            (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    if invocation.route is not None:
        env.update(_route_env(invocation, invocation.route, scratch))
    env.update(dict(invocation.env))
    return env


def _route_env(invocation: Invocation, route: ModelRoute, scratch: Path) -> dict[str, str]:
    """How each CLI is pointed at the gateway, through its own documented settings. The token stands where the key
    would; the provider's key never reaches the turn."""
    kind, url, token = invocation.preset, route.url, route.token
    if kind == "claude":
        return {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": token}
    if kind == "gemini":
        return {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": token}
    if kind in ("codex", "qwen"):  # the endpoint is on the command line; the key in the variable it names
        return {TOKEN_ENV: token} if kind == "codex" else {"OPENAI_API_KEY": token}
    if kind == "aider":  # litellm: openai/<model> and anthropic/<model> take these
        if route.wire == "anthropic":
            return {"ANTHROPIC_API_BASE": url, "ANTHROPIC_API_KEY": token}
        return {"OPENAI_API_BASE": url, "OPENAI_API_KEY": token}
    if kind == "opencode":
        xdg = {f"XDG_{name}_HOME": str(scratch / "opencode" / name.lower()) for name in ("DATA", "CONFIG", "STATE", "CACHE")}
        for folder in xdg.values():
            Path(folder).mkdir(parents=True, exist_ok=True)
        sdk, base = ("@ai-sdk/anthropic", url + "/v1") if route.wire == "anthropic" else ("@ai-sdk/openai-compatible", url)
        options = {"baseURL": base, "apiKey": "{env:" + TOKEN_ENV + "}"}
        provider: dict[str, object] = {"npm": sdk, "name": "banach gateway", "options": options,
                    "models": {invocation.model: {"name": invocation.model}}}
        config = scratch / "opencode.json"
        config.write_text(json.dumps({"provider": {"banach": provider}, "autoupdate": False, "share": "disabled"}))
        return {**xdg, "OPENCODE_CONFIG": str(config), TOKEN_ENV: token}
    if kind == "pi":
        agent_dir = scratch / "pi-agent"
        agent_dir.mkdir(parents=True, exist_ok=True)
        api = "anthropic-messages" if route.wire == "anthropic" else "openai-completions"
        pi_provider: dict[str, object] = {"baseUrl": url, "api": api, "apiKey": TOKEN_ENV, "models": [{"id": invocation.model}],
                    # what a generic OpenAI-compatible server (vLLM, llama.cpp, Ollama) lacks; harmless elsewhere
                    "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False}}
        (agent_dir / "models.json").write_text(json.dumps({"providers": {"banach": pi_provider}}))
        # no retries of its own: the gateway ends the turn on a limit
        (agent_dir / "settings.json").write_text(json.dumps({"retry": {"enabled": False}}))
        return {"PI_CODING_AGENT_DIR": str(agent_dir), TOKEN_ENV: token}
    return {"BANACH_MODEL_URL": url, TOKEN_ENV: token, "BANACH_MODEL_WIRE": route.wire}  # any program


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
    executable, flags, prompt_mode, model_flag = _PRESETS[preset.preset]
    argv: list[str] = [*(shlex.split(preset.command) if preset.command else [executable]), *flags]
    endpoint = _endpoint_env(name, preset)
    base_url = route.url if route else preset.base_url
    if base_url and preset.preset == "codex":
        # a model provider of its own, given on the command line: no config.toml to write. Codex appends /responses.
        key = TOKEN_ENV if route else (preset.api_key_env or "OPENAI_API_KEY")
        provider = f'{{name="banach", base_url="{base_url}", env_key="{key}", wire_api="responses", ' \
                   'request_max_retries=1, stream_max_retries=1}'
        argv += ["-c", "model_provider=banach", "-c", f"model_providers.banach={provider}"]
    if base_url and preset.preset in _BASE_URL_FLAG:
        argv += [_BASE_URL_FLAG[preset.preset], base_url]
    model = _model_for_cli(preset.preset, preset.model, route)
    if model and model_flag:
        argv += [model_flag, model]
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
    wires = ROUTE_WIRES.get(preset.preset, ())
    if not wires:
        raise AgentError(f"agents.{name}.provider: preset '{preset.preset}' cannot be pointed at Banach's gateway; "
                         "use base_url/api_key_env, or preset 'command' with BANACH_MODEL_URL and BANACH_MODEL_TOKEN")
    if route is None:
        raise AgentError(f"agents.{name} talks to the model through Banach's gateway, which is not running")
    if route.wire not in wires:
        raise AgentError(f"agents.{name}: preset '{preset.preset}' speaks {' or '.join(wires)}, but provider "
                         f"'{preset.provider}' is {route.wire}; pick a provider of a wire this CLI speaks")
    if not preset.model and preset.preset in ("opencode", "pi", "aider"):
        raise AgentError(f"agents.{name}.model: {preset.preset} needs a model name to ask the gateway for")
    return route


def _model_for_cli(kind: str, model: str, route: ModelRoute | None) -> str:
    """The model as the CLI names it: through the gateway, opencode and pi name it by the provider Banach writes
    (banach/<model>) and aider by litellm's prefix for the wire (openai/<model>, anthropic/<model>)."""
    if route is None or not model:
        return model
    if kind in ("opencode", "pi"):
        return f"banach/{model}"
    if kind == "aider" and not model.startswith(f"{route.wire}/"):
        return f"{route.wire}/{model}"
    return model


def _endpoint_env(name: str, preset: AgentPreset) -> tuple[tuple[str, str], ...]:
    """The preset's endpoint and key as the CLI reads them, then its `env`."""
    env: dict[str, str] = {}
    if preset.base_url:
        if preset.preset not in _BASE_URL_ENV and preset.preset not in _BASE_URL_FLAG and preset.preset != "codex":
            raise AgentError(f"agents.{name}.base_url: preset '{preset.preset}' takes its endpoint from its own config, "
                             "not from base_url; see docs/agents.md for how to point it at a server, or use provider "
                             "(Banach's gateway), which works for every CLI")
        if preset.preset in _BASE_URL_ENV:
            env[_BASE_URL_ENV[preset.preset]] = preset.base_url
    if preset.api_key_env:
        key = os.environ.get(preset.api_key_env)
        if not key:
            raise AgentError(f"agents.{name}.api_key_env names {preset.api_key_env}, which is not set in build-loop's "
                             f"environment; export it before starting build-loop, or clear api_key_env")
        env[preset.api_key_env] = key
        if preset.preset in _KEY_ENV:
            env[_KEY_ENV[preset.preset]] = key
    env.update(preset.env)
    return tuple(env.items())
