"""Provider keys: read by build-loop only, never handed to an agent.

A key lives in state/keys/providers/NAME (mode 0600; the keys folder is hidden from every sandboxed child), written
by `build-loop key set NAME`, or in the variable named by gateway.providers.NAME.key_env. A variable is not enough
to hide: any process of the same user can read another's starting environment in /proc/PID/environ (Landlock's
ptrace rule guards /proc/PID/mem, not environ). So build-loop, finding such a variable, starts itself again without
it (`drop_key_variables`), handing the keys to its new self through a pipe it reads at once."""
from __future__ import annotations

import json
import os
import sys

from shared.config import ProviderConfig
from shared.errors import ConfigError
from shared.provider_keys import key_file, store_key
from shared.workspace import Workspace

__all__ = ["KEYS_FD", "drop_key_variables", "key_file", "key_variables", "load_keys", "store_key"]


KEYS_FD = "BANACH_GATEWAY_KEYS_FD"


def key_variables(ws: Workspace) -> list[str]:
    """The configured key variables present in this process's environment."""
    return sorted({p.key_env for p in ws.config.gateway.providers.values() if p.key_env and p.key_env in os.environ})


def drop_key_variables(ws: Workspace) -> None:
    """When a provider key is in this process's environment, exec this same command again without it; the keys go
    to the new process through an inherited pipe, which it reads and closes before any agent runs. Returns only when
    there is nothing to drop."""
    names = key_variables(ws)
    if not names:
        return
    reader, writer = os.pipe()
    os.write(writer, json.dumps({name: os.environ[name] for name in names}).encode())  # far below a pipe's 64 KiB
    os.close(writer)
    os.set_inheritable(reader, True)
    env = {key: value for key, value in os.environ.items() if key not in names}
    env[KEYS_FD] = str(reader)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, sys.orig_argv, env)


def _handed_over() -> dict[str, str]:
    """The keys a previous exec of this process handed over (drop_key_variables), read once."""
    fd = os.environ.pop(KEYS_FD, None)
    if fd is None:
        return {}
    chunks = []
    with os.fdopen(int(fd), "rb") as pipe:
        while chunk := pipe.read():
            chunks.append(chunk)
    return dict(json.loads(b"".join(chunks) or b"{}"))


def load_keys(ws: Workspace) -> dict[str, str]:
    """Every provider's key, from its variable (handed over, or still in the environment, which it then leaves) or its
    file. A provider with auth "none" needs none; any other without a key is an error that says where to put it."""
    handed = _handed_over()
    return {name: _key(ws, name, provider, handed) for name, provider in ws.config.gateway.providers.items()}


def _key(ws: Workspace, name: str, provider: ProviderConfig, handed: dict[str, str]) -> str:
    if provider.key_env and provider.key_env in handed:
        return handed[provider.key_env].strip()
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
