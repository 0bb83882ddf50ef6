"""Where the model providers' keys are kept: state/keys/providers/NAME, mode 0600, in the keys folder that every
sandboxed child has hidden and that only build reads (build_loop/gateway/keys.py). `build-loop key set` writes one;
`banach up` writes one for a key it finds in its environment, so that supervisord and the loops start without it."""
from __future__ import annotations

import os
from pathlib import Path

from shared.atomic import write_text
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
    write_text(path, key + "\n", private=True)
    return path


def keep_keys_out_of_environment(ws: Workspace) -> tuple[dict[str, str], list[str]]:
    """The environment for processes that outlive this command (supervisord and the loops), without the provider key
    variables of banach.toml; each key found is stored in its file first. Returns (environment, what was moved)."""
    moved = []
    for name, provider in ws.config.gateway.providers.items():
        if provider.key_env and os.environ.get(provider.key_env, "").strip():
            path = store_key(ws, name, os.environ[provider.key_env])
            moved.append(f"${provider.key_env} -> {ws.relative(path)}")
    names = {p.key_env for p in ws.config.gateway.providers.values() if p.key_env}
    return {key: value for key, value in os.environ.items() if key not in names}, moved
