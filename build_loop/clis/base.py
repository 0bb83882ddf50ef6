"""What Banach knows of one agent CLI, as one class per CLI (this package's other modules) in a registry
(`__init__.py`). The presets in banach.toml name a CLI; build_loop/agents.py asks the class, never compares names.

A CLI class says: its executable and the flags that make it run headless inside Banach's sandbox; how the prompt
reaches it; where it keeps its own state; what it needs in its environment on every turn; its words for a usage
limit; how it is pointed at an endpoint directly (base_url, api_key_env) and at Banach's gateway (the wire formats it
speaks, and the settings that carry the gateway's URL and the turn's token)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

TOKEN_ENV = "BANACH_MODEL_TOKEN"  # where a routed CLI whose config names a variable finds the turn's token


class Cli:
    """A CLI Banach drives; the subclasses in this package set the attributes and override the hooks they need."""

    name: ClassVar[str]
    executable: ClassVar[str]
    flags: ClassVar[tuple[str, ...]]  # before the model and the prompt
    prompt: ClassVar[str] = "stdin"  # "stdin" | "stdin-dash" (a '-' argument too) | "file-flag:FLAG" (FLAG PROMPT_FILE)
    model_flag: ClassVar[str] = "--model"
    state: ClassVar[tuple[str, ...]] = ()  # its login, sessions and caches, as its documentation gives them
    env: ClassVar[dict[str, str]] = {}  # on every turn
    limit: ClassVar[re.Pattern[str]] = re.compile(r"rate limit|too many requests|\b429\b", re.IGNORECASE)
    wires: ClassVar[tuple[str, ...]] = ()  # what it can speak to the gateway
    base_url_env: ClassVar[str] = ""  # directly: the variable that takes base_url
    base_url_flag: ClassVar[str] = ""  # directly: the flag that takes base_url
    key_env: ClassVar[str] = ""  # directly: the variable it reads its key from, besides api_key_env's own name
    scratch_home: ClassVar[str] = ""  # the variable naming its config folder: in the turn's scratch when pointed at one
    routed_state_in_scratch: ClassVar[bool] = False  # through the gateway, it keeps no state in HOME
    needs_model: ClassVar[bool] = False  # through the gateway it cannot pick a model of its own

    def takes_base_url(self) -> bool:
        return bool(self.base_url_env or self.base_url_flag)

    def state_in_scratch(self, *, direct_endpoint: bool, routed: bool) -> bool:
        return bool(self.scratch_home) and direct_endpoint or routed and (bool(self.scratch_home)
                                                                          or self.routed_state_in_scratch)

    def endpoint_argv(self, base_url: str, key_env: str) -> list[str]:
        """Arguments that point it at base_url (its key in the variable key_env)."""
        return [self.base_url_flag, base_url] if self.base_url_flag else []

    def model_name(self, model: str, wire: str | None) -> str:
        """The model as this CLI names it (wire: the gateway's, or None when it talks to the model directly)."""
        return model

    def turn_env(self, scratch: Path, *, direct_endpoint: bool) -> dict[str, str]:
        """Settings for every turn beyond `env`, written into the turn's scratch where they are files."""
        if self.scratch_home and direct_endpoint:
            home = scratch / f"{self.name}-home"
            home.mkdir(parents=True, exist_ok=True)
            return {self.scratch_home: str(home)}
        return {}

    def route_env(self, url: str, token: str, wire: str, model: str, scratch: Path) -> dict[str, str]:
        """How it is pointed at the gateway through its own settings: the token stands where the key would."""
        raise NotImplementedError(f"{self.name} cannot be pointed at the gateway")


class ConfiguredProvider(Cli):
    """A CLI that, through the gateway, is given a provider named `banach` in a config file Banach writes into the
    turn's scratch (opencode, pi): it keeps no state in HOME, and names the model banach/<model>."""

    wires = ("openai", "anthropic")
    routed_state_in_scratch = needs_model = True

    def model_name(self, model: str, wire: str | None) -> str:
        return f"banach/{model}" if wire and model else model
