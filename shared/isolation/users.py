"""The users backend: one system account per role owns its stores; supervisord starts each loop as it.

Ownership (everything else stays readable by all roles, and writable by none of them):
  PREFIX spec   canon/, inbox/, state/spec/, state/keys/spec.key
  PREFIX plan   plan/, state/plan/, state/keys/plan.key
  PREFIX build  code/, state/build/, state/keys/build.key
Set up as root with `banach setup-users` (or `banach init --users`). Works where Landlock is missing;
where both exist, use landlock, which also narrows build's agent (under users it runs as build's account).
"""
from __future__ import annotations

import grp
import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from shared.errors import IsolationError
from shared.workspace import LOOP_ROLES, Workspace

NOLOGIN = next((p for p in ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false") if Path(p).exists()), "/bin/false")


@dataclass(frozen=True)
class Account:
    role: str
    name: str
    uid: int
    gid: int


def account_name(ws: Workspace, role: str) -> str:
    return f"{ws.config.isolation.account_prefix}{role}"


def lookup(name: str) -> Account | None:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return Account(name.rsplit("-", 1)[-1], name, entry.pw_uid, entry.pw_gid)


def owned_stores(ws: Workspace, role: str) -> list[Path]:
    return {
        "spec": [ws.canon, ws.inbox, ws.role_dir("spec"), ws.keys_dir / "spec.key"],
        "plan": [ws.plan_dir, ws.role_dir("plan"), ws.keys_dir / "plan.key"],
        "build": [ws.code, ws.role_dir("build"), ws.keys_dir / "build.key"],
    }[role]


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    if not path.exists():
        return
    os.chown(path, uid, gid, follow_symlinks=False)
    if path.is_dir() and not path.is_symlink():
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)


def setup_users(ws: Workspace) -> list[Account]:
    """Create the role accounts (if missing) and give each its stores. Needs root."""
    if os.geteuid() != 0:
        raise IsolationError("setting up the users backend needs root: run 'sudo banach setup-users -w WS'")
    if shutil.which("useradd") is None:
        raise IsolationError("useradd is not installed; install the 'passwd' package (Debian) or create the accounts by hand")
    accounts = []
    for role in LOOP_ROLES:
        name = account_name(ws, role)
        if lookup(name) is None:
            result = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", NOLOGIN, "--user-group", name],
                                    capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise IsolationError(f"useradd {name} failed: {result.stderr.strip()}")
        account = lookup(name)
        assert account is not None
        accounts.append(account)
        for store in owned_stores(ws, role):
            store.parent.mkdir(parents=True, exist_ok=True)
            _chown_tree(store, account.uid, account.gid)
        for store in owned_stores(ws, role):
            if store.is_file():
                store.chmod(0o600)
            elif store.is_dir():
                store.chmod(0o755)
    _environment_folders(ws, accounts)
    ws.keys_dir.chmod(0o711)  # traversable, not listable; each key is 0600 to its role
    for path in (ws.root, ws.state, ws.supervisor_dir):
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o755)
    ws.config_file.chmod(0o644)
    return accounts


def _environment_folders(ws: Workspace, accounts: list[Account]) -> None:
    """The machine's environment cache (root's, 0755) and a folder in it for each role account, its own to write and
    the others' to read: the environment one role builds is used read-only by the others."""
    from shared.environment.cache import cache_base, cache_root

    base = cache_base(ws)
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    for account in accounts:
        folder = cache_root(ws, account.role)  # type: ignore[arg-type]
        folder.mkdir(exist_ok=True)
        os.chown(folder, account.uid, account.gid, follow_symlinks=False)
        folder.chmod(0o755)


def remove_users(ws: Workspace) -> None:
    for role in LOOP_ROLES:
        name = account_name(ws, role)
        if lookup(name) is not None:
            subprocess.run(["userdel", name], capture_output=True, check=False)
            try:
                grp.getgrnam(name)
                subprocess.run(["groupdel", name], capture_output=True, check=False)
            except KeyError:
                pass


def unreachable_ancestors(path: Path) -> list[Path]:
    """Folders on the way to path that other accounts cannot enter (no o+x): the role accounts could not run it."""
    blocked = []
    for folder in [*reversed(path.resolve().parents)]:
        if not folder.stat().st_mode & 0o001:
            blocked.append(folder)
    return blocked


def supervisor_users(ws: Workspace) -> dict[str, str]:
    return {role: account_name(ws, role) for role in LOOP_ROLES}


def check_running_as(ws: Workspace, role: str) -> str:
    name = account_name(ws, role)
    account = lookup(name)
    if account is None:
        raise IsolationError(f"isolation backend 'users' but account {name} does not exist; run 'sudo banach setup-users'")
    if os.geteuid() != account.uid:
        current = pwd.getpwuid(os.geteuid()).pw_name
        raise IsolationError(f"isolation backend 'users': {role}-loop must run as {name}, not {current}; "
                             "start it with 'banach up' (as root), which runs each loop as its account")
    return name


def status(ws: Workspace) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for role in LOOP_ROLES:
        account = lookup(account_name(ws, role))
        owned = account is not None and all(
            not store.exists() or store.stat().st_uid == account.uid for store in owned_stores(ws, role))
        out[role] = {"account": account_name(ws, role), "exists": account is not None, "owns_its_stores": owned}
    return out
