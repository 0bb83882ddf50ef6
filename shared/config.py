"""banach.toml, read in exactly one place into frozen models. The core never sees a dict."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from shared.errors import ConfigError

CONFIG_NAME = "banach.toml"


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PathsConfig(Model):
    canon: str = Field("canon", description="canon's git repository, written only by spec-loop")
    code: str = Field("code", description="the code repository, written only by build-loop")
    inbox: str = Field("inbox", description="drafts for spec-loop to take in")
    plan: str = Field("plan", description="fix_plan.json and fix_plan.md, written only by plan-loop")
    state: str = Field("state", description="journals, keys, logs and scratch space, one folder per role")


class IsolationConfig(Model):
    backend: Literal["landlock", "users", "none"] = Field(
        "landlock", description="how writes are enforced: landlock, users, or none (only when asked by name)"
    )
    reach: Literal["turn", "machine"] = Field(
        "turn", description="what an agent turn can read and reach: 'turn' (its own view: the work tree, canon, the "
        "toolchains it runs, a fresh HOME; its own processes; an unprivileged id; no network but the gateway) or "
        "'machine' (weaker: it reads the whole machine and sees every process; every start-up line says so)")
    read_paths: tuple[str, ...] = Field((), description="more folders a turn may read (read-only), for a toolchain "
                                        "Banach does not find from the agent's command line")
    account_prefix: str = Field("banach-", pattern=r"^[a-z][a-z0-9_-]{0,20}$",
                                description="users backend: the role accounts are PREFIX + spec, plan, build")


class SpecConfig(Model):
    debounce_seconds: float = Field(0.5, ge=0, description="a burst of inbox saves within this window is one intake")
    reconcile_agent: str = Field("", description="agent preset that may flag semantic contradictions; empty: none")


class PlanConfig(Model):
    check_timeout: float = Field(60.0, gt=0, description="seconds a single check may run before it counts as failing")
    jobs: int = Field(0, ge=0, description="checks run in parallel; 0 means one per core")
    agent: str = Field("", description="agent preset for the inferential oracle; "
                                        "empty: requirements without checks are unmeasured")
    agent_timeout: float = Field(300.0, gt=0, description="seconds one plan-agent prompt may run")
    replan_every_commits: int = Field(1, ge=1, description="re-plan after this many build commits")
    replan_on_canon_change: bool = Field(True, description="re-plan when canon gets a new version")
    replan_interval_seconds: float = Field(0.0, ge=0, description="also re-plan on this timer; 0 disables it")
    debounce_seconds: float = Field(0.3, ge=0, description="ref changes within this window are one trigger")
    export_max_bytes: int = Field(
        2 * 1024**3, gt=0,
        description="bytes of files a commit may hold for plan to copy it; a larger one is measured as failing",
    )
    export_max_files: int = Field(
        200_000, gt=0,
        description="files a commit may hold for plan to copy it; one with more is measured as failing",
    )


class SensorConfig(Model):
    name: str = Field(description="stable name; the ratchet compares sensors by it")
    command: str = Field(description="shell command run in the code work tree; exit 0 is green")
    kind: Literal["command", "pytest"] = Field(
        "command", description="pytest: results are taken per test id (from junit XML) for the ratchet"
    )
    timeout: float = Field(120.0, gt=0, description="seconds before the sensor is killed and counts as failing")
    network: Literal["none", "open"] = Field("none", description="none: it runs cut off, only its own loopback "
                                             "answers; open: the machine's network")


class BuildConfig(Model):
    agent: str = Field("sim", description="the agent preset of the first ladder rung when ladder is empty")
    ladder: tuple[str, ...] = Field((), description="agent presets to climb on stalls, cheapest first")
    turn_timeout: float = Field(600.0, gt=0, description="wall-clock seconds for one agent turn")
    max_attempts: int = Field(4, ge=1, description="attempts on one item in one round before it is blocked")
    rounds: int = Field(3, ge=1, description="rounds an item gets before it waits for a person: when nothing else is "
                        "ready, a blocked item gets another round (a fresh attempt budget, the ladder's top rung, its "
                        "failure history in the prompt); 1: blocked items wait for a person at once")
    flake_reruns: int = Field(2, ge=0, description="when a check flips after a turn (green to red or red to green), how "
                              "many more times exactly those checks run on the same tree: one that reads both ways is "
                              "flaky, neither a regression nor progress; 0: no reruns")
    workers: int = Field(1, ge=1, le=32, description="items worked at once, each in its own work tree (a lane) from "
                         "the same base commit; one integrator re-measures each kept change on main before committing it")
    stall_patience: int = Field(2, ge=1, description="iterations without progress on an item before climbing a rung")
    sensors: tuple[SensorConfig, ...] = Field((), description="build's own sensors, run after every turn")
    fix_commands: tuple[str, ...] = Field((), description="formatters or autofix run after the fence, before sensors")
    context_commands: tuple[str, ...] = Field((), description="commands whose output goes into the prompt")
    env_allow: tuple[str, ...] = Field(
        ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "PYTHONPATH", "VIRTUAL_ENV"),
        description="environment variables passed to the agent; nothing else reaches it",
    )
    max_turns: int = Field(0, ge=0, description="stop the run after this many agent turns; 0: no limit")
    max_seconds: float = Field(0.0, ge=0, description="stop the run after this much wall-clock time; 0: no limit")
    max_cost_usd: float = Field(0.0, ge=0, description="stop when reported agent cost exceeds this; 0: no limit")
    idle_poll_seconds: float = Field(5.0, gt=0, description="how often an idle build-loop looks for a new fix_plan")
    max_file_bytes: int = Field(10 * 2**20, gt=0, description="a file the agent writes past this size is removed and the "
                                "turn recorded as hostile; also the agent's RLIMIT_FSIZE")
    max_changed_paths: int = Field(5000, gt=0, description="a turn that changes more paths than this is rolled back whole")
    max_output_bytes: int = Field(10 * 2**20, gt=0, description="what an agent turn or a sensor may print; past it "
                                  "the output is cut and the turn capped")
    max_processes: int = Field(512, gt=0, description="processes one agent turn or sensor may have at once "
                               "(needs a pids cgroup; see banach doctor)")
    max_memory_bytes: int = Field(8 * 2**30, gt=0, description="memory of one agent turn or sensor, all its processes "
                                  "together (needs a memory cgroup; see banach doctor)")

    @property
    def rungs(self) -> tuple[str, ...]:
        """The ladder as it is climbed: the configured ladder, or the one agent when there is none."""
        return self.ladder or (self.agent,)


class AgentPreset(Model):
    preset: Literal["sim", "command", "claude", "codex", "aider", "gemini", "opencode", "pi", "qwen"] = Field(
        description="which CLI this is; decides argv, prompt passing and output parsing"
    )
    command: str = Field("", description="for preset 'command': the program line; others: override the executable")
    model: str = Field("", description="model name passed to the CLI, where it takes one")
    extra_args: tuple[str, ...] = Field((), description="appended to the preset's argv")
    base_url: str = Field(
        "", pattern=r"^(https?://\S+)?$",
        description="claude, codex, gemini: the model endpoint, set through the CLI's own base-URL setting "
        "(ANTHROPIC_BASE_URL, a codex model provider, GOOGLE_GEMINI_BASE_URL); the CLI then runs with a fresh "
        "config folder in the turn's scratch and needs no login or state in HOME. Empty: the CLI's own provider and login")
    api_key_env: str = Field(
        "", pattern=r"^([A-Za-z_][A-Za-z0-9_]*)?$",
        description="name of the variable in build-loop's environment that holds the provider key; the agent gets it "
        "under that name and under the name its CLI reads (ANTHROPIC_API_KEY, GEMINI_API_KEY; codex's provider "
        "env_key), without adding it to build.env_allow")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="more environment for this CLI only, set after the preset's own (e.g. CLAUDE_CODE_MAX_RETRIES)")
    state_paths: tuple[str, ...] | None = Field(
        None, description="where this CLI keeps its own state (login, sessions), which the sandbox lets it write; "
        "each starts with ~ or $VAR or /; default: the preset's documented locations")
    provider: str = Field(
        "", description="a provider in [gateway.providers]: the CLI then talks to Banach's model gateway with a token "
        "valid for one turn, and never holds the provider's key (instead of base_url and api_key_env)")
    upstream_model: str = Field(
        "", description="with provider: the model the gateway requests upstream, whatever the CLI asks for (a ladder "
        "rung can climb to a stronger model this way with any CLI); empty: the CLI's own choice")

    @field_validator("preset", mode="before")
    @classmethod
    def _no_goose(cls, preset: object) -> object:
        if preset == "goose":
            raise ValueError("there is no goose preset: goose is not on the npm or PyPI registries, so its preset could "
                             "not be run against the real program and was removed. Run it as preset = \"command\", "
                             "command = \"sh -c 'goose run --no-session -i \\\"$BANACH_PROMPT_FILE\\\"'\"")
        return preset

    @model_validator(mode="after")
    def _direct_or_gateway(self) -> AgentPreset:
        if self.provider and (self.base_url or self.api_key_env):
            raise ValueError("give provider (the CLI talks to Banach's gateway) or base_url/api_key_env (the CLI talks "
                             "to the model directly and holds the key), not both")
        if self.upstream_model and not self.provider:
            raise ValueError("upstream_model is the model Banach's gateway requests: it needs provider")
        return self

    @field_validator("state_paths")
    @classmethod
    def _absolute(cls, paths: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for path in paths or ():
            if not path.startswith(("~", "$", "/")):
                raise ValueError(f"'{path}' must start with ~, $VAR or /: a relative path would depend on the loop's cwd")
        return paths


class SimConfig(Model):
    seed: int = Field(1, description="seed of the simulated agent's fault draws")
    wrong_edit: float = Field(0.25, ge=0, le=1, description="rate of plausible but wrong edits")
    no_edit: float = Field(0.1, ge=0, le=1, description="rate of turns that change nothing")
    out_of_scope: float = Field(0.2, ge=0, le=1, description="rate of turns that also edit outside the item's scope")
    tamper: float = Field(0.0, ge=0, le=1, description="rate of wrong edits that also rewrite the tests judging them")


class ProviderConfig(Model):
    wire: Literal["anthropic", "openai", "gemini"] = Field(
        description="the API the provider speaks: anthropic (Messages), openai (Chat Completions and Responses, also "
        "OpenRouter, vLLM, llama.cpp, Ollama), gemini (generateContent)")
    base_url: str = Field(
        pattern=r"^https?://\S+$",
        description="where the gateway sends the calls; the CLI's path is appended (anthropic: https://api.anthropic.com, "
        "openai: https://api.openai.com/v1, gemini: https://generativelanguage.googleapis.com)")
    key_env: str = Field(
        "", pattern=r"^([A-Za-z_][A-Za-z0-9_]*)?$",
        description="variable in build-loop's environment holding the key, read once at start and then removed from "
        "build's environment; without it the key is read from state/keys/providers/NAME (`build-loop key set NAME`)")
    auth: Literal["auto", "x-api-key", "bearer", "x-goog-api-key", "none"] = Field(
        "auto", description="how the key is sent upstream; auto: x-api-key for anthropic, bearer for openai, "
        "x-goog-api-key for gemini; none: a local server with no key")


class PriceConfig(Model):
    input: float = Field(0.0, ge=0, description="USD per million input tokens")
    output: float = Field(0.0, ge=0, description="USD per million output tokens")
    cache_read: float = Field(0.0, ge=0, description="USD per million input tokens read from the provider's cache")
    cache_write: float = Field(0.0, ge=0, description="USD per million input tokens written to the provider's cache")


class GatewayConfig(Model):
    providers: dict[str, ProviderConfig] = Field(default_factory=dict, description="named upstream providers")
    prices: dict[str, PriceConfig] = Field(
        default_factory=dict, description="price per model name as sent upstream; a model not listed has no cost "
        "(its tokens still count against the token budgets)")
    network: Literal["open", "gateway-only"] = Field(
        "gateway-only", description="gateway-only: a turn runs in a network namespace of its own whose one way out is "
        "the gateway (a turn without a gateway reaches nothing); open: the machine's network, which every start-up "
        "line names (needs root or unprivileged user namespaces; see banach doctor)")
    max_turn_tokens: int = Field(0, ge=0, description="input+output tokens one turn may use; 0: no limit")
    max_turn_cost_usd: float = Field(0.0, ge=0, description="cost one turn may reach; 0: no limit")
    max_item_tokens: int = Field(0, ge=0, description="tokens all turns on one item may use at a canon version; 0: no limit")
    max_item_cost_usd: float = Field(0.0, ge=0, description="cost of all turns on one item at a canon version; 0: no limit")
    max_run_tokens: int = Field(0, ge=0, description="tokens one build-loop run may use; 0: no limit")
    max_run_cost_usd: float = Field(0.0, ge=0, description="cost one build-loop run may reach; 0: no limit")
    upstream_timeout: float = Field(600.0, gt=0, description="seconds an upstream call may go without sending a byte")


class ClusterConfig(Model):
    backend: Literal["local", "ray"] = Field(
        "local", description="where build's parallel workers run their turns: 'local' (threads of build-loop) or "
        "'ray' (a task per turn on a Ray cluster; needs build.workers > 1 and `pip install 'banach[cluster]'`)")
    address: str = Field("", pattern=r"^(\S+:\d+)?$",
                         description="with backend 'ray': the head's GCS address, host:port, as `ray start --head` printed")
    cpus_per_turn: float = Field(1.0, gt=0, description="CPUs a turn asks of its node (its sensors need them)")
    max_retries: int = Field(3, ge=0, description="times a turn or a batch of checks is run again, on another node, when "
                             "its node or worker dies (a turn gets a new gateway token each time)")
    gateway_host: str = Field("", description="with backend 'ray': the head's address the nodes reach build's gateway "
                              "door at; empty: the address Ray knows the head by")
    gateway_port: int = Field(0, ge=0, le=65535, description="with backend 'ray': the door's TCP port on gateway_host "
                              "(open it from the nodes to the head); 0: any free port")
    check_batches: int = Field(0, ge=0, description="with backend 'ray': plan's checks of a pass go out as this many "
                               "tasks, spread over the nodes; 0: one per live node")


class EnvConfig(Model):
    build: Literal["auto", "none"] = Field(
        "auto", description="auto: the project's dependencies, read from its pyproject.toml, setup.cfg, "
                            "*.egg-info/requires.txt and requirements files, are installed into a venv its tests run in; "
                            "none: only `requirements` below")
    python: str = Field("", description="the interpreter the venv is made from; empty: the one Banach runs on")
    tool: Literal["pip", "uv"] = Field(
        "pip", description="what makes the venv and installs into it: pip (with python -m venv; reads pip's own "
                           "configuration, pip.conf and PIP_*), or uv (several times faster; reads uv's own, uv.toml "
                           "and UV_*, not pip.conf; needs `pip install uv`; never downloads a Python)")
    requirements: tuple[str, ...] = Field((), description="requirements added to what the project's files name")
    import_roots: tuple[str, ...] = Field(
        (), description="folders of the code its packages are imported from, such as [\"src\"]; empty: read from its "
                        "build or pytest configuration, else src/ when the packages are there, else the root")
    index_hosts: tuple[str, ...] = Field(
        ("pypi.org", "files.pythonhosted.org"),
        description="hosts the environment's build may reach, through Banach's proxy in a network of its own, besides "
                    "those pip's and uv's own configuration names (index-url, extra-index-url, find-links); "
                    "\".example.org\" takes its subdomains; empty: any host on index_ports (Landlock's port rule "
                    "alone, the weaker mode)")
    index_ports: tuple[int, ...] = Field((443, 80), description="TCP ports the environment's build may connect to "
                                                                "(the package index's)")
    npm_hosts: tuple[str, ...] = Field(
        ("registry.npmjs.org",), description="hosts `npm ci` may reach for a project with a package-lock.json (through "
                                             "the same proxy), besides the registry npm's own configuration names")
    go_hosts: tuple[str, ...] = Field(
        ("proxy.golang.org", "sum.golang.org"), description="hosts `go mod download` may reach for a Go module with "
                                                            "requirements, besides those GOPROXY and GOSUMDB name")
    install_project: bool = Field(
        True, description="also install the project itself (without its dependencies) when its environment is built, "
                          "so that code reading its own metadata (importlib.metadata.version) works; what is measured is "
                          "always the commit's code, first on sys.path")
    cache: str = Field(
        "", description="the machine's folder of environments, shared read-only by every workspace and role (each "
                        "dependency set is built once per machine); empty: /var/cache/banach/env under the users backend, "
                        "else $XDG_CACHE_HOME/banach/env when set, else /var/cache/banach/env for root, "
                        "~/.cache/banach/env for anyone else")
    keep: int = Field(3, ge=1, description="environments pruning never removes: the most recently used")
    max_age_days: float = Field(30.0, gt=0, description="an environment unused this long is removed (beyond `keep`)")
    max_cache_bytes: int = Field(
        20 * 2**30, gt=0, description="disk the cache may hold: past it, the least recently used environments beyond "
                                      "`keep` are removed (each workspace that builds one prunes by its own setting)")
    max_memory_bytes: int = Field(4 * 2**30, gt=0, description="memory of one step of an environment's build, all its "
                                                               "processes together (needs a memory cgroup)")
    max_processes: int = Field(512, gt=0, description="processes one step of an environment's build may have at once "
                                                      "(needs a pids cgroup)")
    max_seconds: float = Field(
        900.0, gt=0, description="wall-clock seconds for a whole environment's build; one a turn's change needs gets "
                                 "what is left of that turn's build.turn_timeout instead, when that is less")


class ServeConfig(Model):
    enabled: bool = Field(False, description="banach up starts the dashboard (banach serve) as a fourth program")
    host: str = Field("127.0.0.1", description="the address the dashboard listens on; keep it on loopback unless a "
                      "proxy with TLS stands in front of it")
    port: int = Field(8765, ge=0, le=65535, description="the dashboard's port; 0 takes any free one")


class Config(Model):
    paths: PathsConfig = PathsConfig()
    isolation: IsolationConfig = IsolationConfig()
    spec: SpecConfig = SpecConfig()
    plan: PlanConfig = PlanConfig()
    build: BuildConfig = BuildConfig()
    agents: dict[str, AgentPreset] = Field(
        default_factory=lambda: {"sim": AgentPreset(preset="sim")}, description="named agent presets"
    )
    sim: SimConfig = SimConfig()
    gateway: GatewayConfig = GatewayConfig()
    cluster: ClusterConfig = ClusterConfig()
    env: EnvConfig = EnvConfig()
    serve: ServeConfig = ServeConfig()

    @model_validator(mode="after")
    def _providers_exist(self) -> Config:
        if self.gateway.network == "gateway-only":
            direct = [rung for rung in self.build.rungs if rung in self.agents
                      and self.agents[rung].preset not in ("sim", "command") and not self.agents[rung].provider]
            if direct:
                raise ValueError(f"gateway.network is 'gateway-only' (the default), but {', '.join(direct)} would talk "
                                 "to its model directly and find no way out: give each ladder rung a provider, or set "
                                 "gateway.network = 'open' to let turns reach the machine's network")
        for name, preset in self.agents.items():
            if preset.provider and preset.provider not in self.gateway.providers:
                known = ", ".join(sorted(self.gateway.providers)) or "none yet"
                raise ValueError(f"agents.{name}.provider names '{preset.provider}', which is not in [gateway.providers] "
                                 f"(defined: {known}); add a [gateway.providers.{preset.provider}] table")
        return self


def _did_you_mean(loc: tuple[int | str, ...]) -> str:
    """For an unknown key, the closest key its section knows."""
    import difflib

    model: type[BaseModel] | None = Config
    parts = list(loc[:-1])
    if parts[:1] == ["agents"] and len(parts) == 2:  # [agents.NAME]: a dict of presets
        model, parts = AgentPreset, []
    elif parts[:1] == ["gateway"] and len(parts) == 3 and parts[1] in ("providers", "prices"):
        model, parts = (ProviderConfig if parts[1] == "providers" else PriceConfig), []
    for part in parts:
        field = model.model_fields.get(str(part)) if model else None
        annotation = field.annotation if field else None
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    if model is None:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1)
    return f" (did you mean '{close[0]}'?)" if close else f" (known keys: {', '.join(model.model_fields)})"


def _describe(error: ValidationError, path: Path) -> str:
    lines = [f"{path}: invalid configuration"]
    for problem in error.errors():
        key = ".".join(str(part) for part in problem["loc"]) or "(top level)"
        hint = ""
        if problem["type"] == "extra_forbidden" and problem["loc"]:
            hint = _did_you_mean(problem["loc"])
        lines.append(f"  {key}: {problem['msg'].removeprefix('Value error, ')}{hint}")
    lines.append("Fix these keys (see README, 'Configuration') and run the command again.")
    return "\n".join(lines)


def parse_config(text: str, path: Path) -> Config:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path)) from None
    for rung in config.build.rungs:
        if rung not in config.agents:
            raise ConfigError(
                f"{path}: build names agent preset '{rung}', which is not defined; "
                f"add [agents.{rung}] or pick one of: {', '.join(sorted(config.agents))}"
            )
    for role, name in (("plan.agent", config.plan.agent), ("spec.reconcile_agent", config.spec.reconcile_agent)):
        if name and name not in config.agents:
            raise ConfigError(f"{path}: {role} = '{name}' is not a defined agent preset; add [agents.{name}]")
    return config


def load_config(workspace: Path) -> Config:
    path = workspace / CONFIG_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{path} not found: {workspace} is not a Banach workspace. "
            "Create one with 'banach init DIR' or pass --workspace."
        ) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    return parse_config(text, path)
