"""Agent presets: for each CLI, the documented command line, how the prompt reaches it, and what its
output says (cost, usage limits). The harness itself makes no network call for any of them.

Every agent gets the prompt on stdin and in the file named by BANACH_PROMPT_FILE; a preset adds the
flags its CLI needs to run headless, and says where the prompt goes when the CLI does not read stdin.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from shared.config import AgentPreset, Config
from shared.errors import AgentError

SIMULATED_LABEL = "SIMULATED AGENT (a scripted stand-in for an LLM)"


@dataclass(frozen=True)
class Invocation:
    argv: tuple[str, ...]
    label: str  # what people are told is running
    state_paths: tuple[Path, ...] = ()  # the CLI's own state, which the sandbox lets it write
    preset: str = ""  # "" for --agent-command


@dataclass(frozen=True)
class TurnReport:
    """What the agent's own output says about the turn."""

    cost_usd: float | None = None
    rate_limited: bool = False
    resets_at: float | None = None  # epoch seconds, when the CLI printed one
    claimed_success: bool = False


# Each: (executable, flags before the prompt, how the prompt is passed: "stdin" | "arg" | "file-flag:<flag>")
_PRESETS: dict[str, tuple[str, tuple[str, ...], str, str]] = {
    # Claude Code, print mode: `claude -p` reads the prompt from stdin; JSON output carries total_cost_usd.
    "claude": ("claude", ("-p", "--output-format", "json", "--dangerously-skip-permissions"), "stdin", "--model"),
    # Codex CLI: `codex exec` runs non-interactively ('-' reads the prompt from stdin); workspace-write lets it
    # edit the work tree (its own sandbox, inside ours); --ephemeral keeps no session files.
    "codex": ("codex", ("exec", "--sandbox", "workspace-write", "--skip-git-repo-check", "--ephemeral"), "stdin-dash",
              "--model"),
    # Aider: one message from a file, no auto-commits (the governor commits), no prompts.
    # --no-gitignore: aider would otherwise add .aider* to .gitignore, an edit outside every item's scope.
    "aider": ("aider", ("--yes-always", "--no-auto-commits", "--no-gitignore", "--no-stream", "--no-pretty"),
              "file-flag:--message-file",
              "--model"),
    # Gemini CLI: headless with -p; --yolo approves tool calls.
    "gemini": ("gemini", ("--yolo", "--output-format", "json"), "flag:-p", "--model"),
    # opencode: `opencode run MESSAGE`.
    "opencode": ("opencode", ("run",), "arg", "--model"),
    # goose: `goose run -i FILE` reads instructions from a file; --no-session keeps no state.
    "goose": ("goose", ("run", "--no-session"), "file-flag:-i", ""),
    # pi: print mode reads the prompt from stdin.
    "pi": ("pi", ("-p",), "stdin", "--model"),
}

_LIMIT_PATTERNS = {
    "claude": re.compile(r"usage limit reached|hit your limit|rate[_ ]limit|overloaded_error|\b429\b", re.IGNORECASE),
    "codex": re.compile(r"usage limit|usage_limit_reached|rate limit|too many requests|\b429\b", re.IGNORECASE),
    "aider": re.compile(r"RateLimitError|rate limit|quota", re.IGNORECASE),
    "gemini": re.compile(r"quota exceeded|RESOURCE_EXHAUSTED|rate limit|\b429\b", re.IGNORECASE),
    "opencode": re.compile(r"rate limit|usage limit|too many requests|\b429\b", re.IGNORECASE),
    "goose": re.compile(r"rate limit|too many requests|\b429\b", re.IGNORECASE),
    "pi": re.compile(r"rate limit|usage limit|too many requests|\b429\b", re.IGNORECASE),
    # any program: the phrasings the CLIs above use, and only together with a non-zero exit
    "command": re.compile(r"usage limit|rate[_ ]limit|too many requests|quota exceeded|RESOURCE_EXHAUSTED", re.IGNORECASE),
    "sim": re.compile(r"SIMULATED RATE LIMIT", re.IGNORECASE),
}
# Where each CLI keeps its login, sessions and caches, as its documentation gives them. A CLI that cannot write
# there under the sandbox fails before it starts; only paths that exist are granted, and nothing else outside
# the work tree is. agents.NAME.state_paths replaces the list.
STATE_PATHS: dict[str, tuple[str, ...]] = {
    "claude": ("$CLAUDE_CONFIG_DIR", "~/.claude", "~/.claude.json", "~/.config/claude"),
    "codex": ("$CODEX_HOME", "~/.codex"),
    "aider": ("~/.aider",),
    "gemini": ("~/.gemini",),
    "opencode": ("~/.local/share/opencode", "~/.local/state/opencode", "~/.config/opencode", "~/.cache/opencode"),
    "goose": ("~/.config/goose", "~/.local/share/goose", "~/.local/state/goose"),
    "pi": ("~/.pi",),
}

_EPOCH_RESET = re.compile(r"limit reached\|(\d{9,11})")
_CLOCK_RESET = re.compile(r"resets?(?: at)? (\d{1,2})(?::(\d\d))?\s*(am|pm)?", re.IGNORECASE)
_IN_RESET = re.compile(r"try again in (\d+)\s*(second|minute|hour)s?", re.IGNORECASE)
_SUCCESS_CLAIM = re.compile(r"\b(SUCCESS|all tests pass(?:ed)?|task complete|<promise>.*</promise>)", re.IGNORECASE)


def preset_for(config: Config, name: str) -> AgentPreset:
    try:
        return config.agents[name]
    except KeyError:
        raise AgentError(f"no agent preset named '{name}' in banach.toml; defined: {', '.join(sorted(config.agents))}") from None


def state_paths(config: Config, name: str) -> tuple[Path, ...]:
    """The existing paths where agent preset `name` keeps its own state, expanded for this process."""
    preset = preset_for(config, name)
    patterns = preset.state_paths if preset.state_paths is not None else STATE_PATHS.get(preset.preset, ())
    found: list[Path] = []
    for pattern in patterns:
        expanded = os.path.expanduser(os.path.expandvars(pattern))
        if "$" in expanded or not expanded.startswith("/"):
            continue  # an unset variable, or ~ with no HOME
        path = Path(expanded)
        if path.exists():
            found.append(path.resolve())
    return tuple(dict.fromkeys(found))


def all_state_paths(config: Config) -> tuple[Path, ...]:
    """What every rung of the ladder may write: build-loop keeps these open for its agents to inherit."""
    return tuple(dict.fromkeys(path for rung in config.build.rungs for path in state_paths(config, rung)))


def preset_env(invocation: Invocation, scratch: Path) -> dict[str, str]:
    """Settings that keep a CLI's own files out of the work tree, where the fence would count them as edits."""
    if invocation.preset == "aider":
        return {"AIDER_CHAT_HISTORY_FILE": str(scratch / ".aider.chat.history.md"),
                "AIDER_INPUT_HISTORY_FILE": str(scratch / ".aider.input.history")}
    return {}


def invocation(config: Config, name: str, prompt_file: Path, *, override: str = "") -> Invocation:
    """The argv for one turn. `override` is --agent-command: any program, prompt on stdin."""
    if override:
        return Invocation(tuple(shlex.split(override)), f"command: {override}")
    preset = preset_for(config, name)
    if preset.preset == "sim":
        sim = config.sim
        sim_argv = (sys.executable, "-I", "-m", "build_loop.sim_agent", "--seed", str(sim.seed), "--wrong-edit", str(sim.wrong_edit),
                "--no-edit", str(sim.no_edit), "--out-of-scope", str(sim.out_of_scope), "--tamper", str(sim.tamper),
                *preset.extra_args)
        return Invocation(sim_argv, SIMULATED_LABEL)
    if preset.preset == "command":
        if not preset.command:
            raise AgentError(f"agent preset '{name}' is 'command' but has no command; set agents.{name}.command")
        return Invocation((*shlex.split(preset.command), *preset.extra_args), f"command: {preset.command}",
                          state_paths(config, name), "command")
    executable, flags, prompt_mode, model_flag = _PRESETS[preset.preset]
    argv: list[str] = [*(shlex.split(preset.command) if preset.command else [executable]), *flags]
    if preset.model and model_flag:
        argv += [model_flag, preset.model]
    argv += list(preset.extra_args)
    prompt = prompt_file.read_text(encoding="utf-8")
    if prompt_mode == "stdin-dash":
        argv.append("-")
    elif prompt_mode == "arg":
        argv.append(prompt)
    elif prompt_mode.startswith("flag:"):
        argv += [prompt_mode.split(":", 1)[1], prompt]
    elif prompt_mode.startswith("file-flag:"):
        argv += [prompt_mode.split(":", 1)[1], str(prompt_file)]
    return Invocation(tuple(argv), f"{preset.preset}{' ' + preset.model if preset.model else ''}",
                      state_paths(config, name), preset.preset)


def read_turn(config: Config, name: str, stdout: str, stderr: str, returncode: int, *, now: float) -> TurnReport:
    kind = "command" if name not in config.agents else config.agents[name].preset
    text = stdout + "\n" + stderr
    cost = None
    if kind == "claude":
        try:
            cost = float(json.loads(stdout.strip().splitlines()[-1]).get("total_cost_usd"))
        except (ValueError, IndexError, TypeError, AttributeError):
            cost = None
    limited = bool(_LIMIT_PATTERNS.get(kind, _LIMIT_PATTERNS["command"]).search(text)) and (returncode != 0 or kind == "sim")
    return TurnReport(cost, limited, _reset_time(text, now) if limited else None, bool(_SUCCESS_CLAIM.search(text)))


def _reset_time(text: str, now: float) -> float | None:
    epoch = _EPOCH_RESET.search(text)
    if epoch:
        return float(epoch.group(1))
    later = _IN_RESET.search(text)
    if later:
        unit = {"second": 1, "minute": 60, "hour": 3600}[later.group(2).lower()]
        return now + int(later.group(1)) * unit
    clock = _CLOCK_RESET.search(text)
    if clock:
        hour, minute = int(clock.group(1)) % 12 if clock.group(3) else int(clock.group(1)), int(clock.group(2) or 0)
        if clock.group(3) and clock.group(3).lower() == "pm":
            hour += 12
        local = dt.datetime.fromtimestamp(now).astimezone()
        reset = local.replace(hour=hour % 24, minute=minute, second=0, microsecond=0)
        if reset.timestamp() <= now:
            reset += dt.timedelta(days=1)
        return reset.timestamp()
    return None
