"""Provider keys: read by build-loop only, never handed to an agent.

A key lives in state/keys/providers/NAME (mode 0600; the keys folder is hidden from every sandboxed child), written
by `build-loop key set NAME`, or in the variable named by gateway.providers.NAME.key_env, which build-loop reads
once and then removes from its own environment so that no child (agent, sensor, fix command) inherits it."""
from __future__ import annotations

import os
from pathlib import Path

from shared.atomic import write_text
from shared.config import ProviderConfig
from shared.errors import ConfigError
from shared.workspace import Workspace


def key_file(ws: Workspace, provider: str) -> Path:
    return ws.keys_dir / "providers" / provider


def store_key(ws: Workspace, provider: str, key: str) -> Path:
    if provider not in ws.config.gateway.providers:
        known = ", ".join(sorted(ws.config.gateway.providers)) or "none"
        raise ConfigError(f"no [gateway.providers.{provider}] in {ws.config_file} (defined: {known}); add it first")
    key = key.strip()
    if not key or any(ch.isspace() for ch in key):
        raise ConfigError("the key is empty or holds whitespace: paste the key alone, on one line")
    path = key_file(ws, provider)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_text(path, key + "\n")  # mkstemp makes it 0600
    return path


def load_keys(ws: Workspace) -> dict[str, str]:
    """Every provider's key, from its file or its variable (which is then removed from this process's environment).
    A provider with auth "none" needs none; any other without a key is an error that says where to put it."""
    keys: dict[str, str] = {}
    for name, provider in ws.config.gateway.providers.items():
        keys[name] = _key(ws, name, provider)
    return keys


def _key(ws: Workspace, name: str, provider: ProviderConfig) -> str:
    if provider.key_env and provider.key_env in os.environ:
        return os.environ.pop(provider.key_env).strip()
    path = key_file(ws, name)
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    if provider.auth == "none":
        return ""
    where = f"${provider.key_env} is not set and " if provider.key_env else ""
    raise ConfigError(f"gateway provider '{name}': {where}{path} does not exist. Store the key with "
                      f"`build-loop key set {name}` (reads it from stdin), or set auth = \"none\" for a server that "
                      "takes no key")
