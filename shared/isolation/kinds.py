"""What each kind of run that executes agent-written code may see: one table, one place.

Every process that runs code the agent wrote or chose runs in a view of its own (shared/isolation/view.py): a turn,
build's sensors, plan's and spec's checks, build's fix and context commands, the project's environment build. Each
sees the system folders, the toolchains its command runs (Banach's interpreter and packages among them), the project's
environment, `isolation.read_paths`, and what its row below adds; nothing else of the machine: no other workspace, no
key, no person's HOME, no other run's folder. Under root it runs as uid 65534. What it prints can therefore carry no
file it could not read.

    view = run_view(ws, "sensor", argv, env, python=project.python, read=(tree,))
    argv = sandbox_argv(ws, argv, [run_folder], view=view)

With isolation.reach = 'machine' (or backend 'none') run_view returns None: the run reads the whole machine, and
every start-up line and `banach status` say so.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from shared.isolation.view import SYSTEM_FOLDERS, TURN_UID
from shared.workspace import Workspace

# kind -> what it sees besides the system folders, its toolchains and the project's environment, and its network
KINDS: dict[str, str] = {
    "turn": "the work tree (writable), canon as build exports it, the prompt, a fresh HOME; no network but the gateway",
    "sensor": "the work tree read-only, canon as build exports it, its own run folder (its copy of canon's tests with "
              "its canaries, its HOME and TMPDIR); no network unless its requirement says `network: open`",
    "check": "plan's (or spec's) read-only export of the commit, canon's visible export, its own run folder; no network "
             "unless its requirement says `network: open`",
    "fix": "the work tree (writable: it formats), its scratch; no network",
    "context": "the work tree read-only, its scratch; no network",
    "environment": "a copy of the project, the folder it builds into; the package index through Banach's proxy only",
}


@dataclass(frozen=True)
class RunView:
    """What a confined run sees besides what it may write: folders to read, and, for a turn, a fresh folder that
    appears at the operator's HOME path."""
    kind: str
    read: tuple[Path, ...]
    home: Path | None = None
    open_network: bool = False  # the machine's network (gateway.network = "open", or a check's `network: open`)


def views_on(ws: Workspace) -> bool:
    """Whether runs of agent-written code get views here (isolation.reach 'turn', with something enforced)."""
    return ws.config.isolation.reach == "turn" and ws.config.isolation.backend != "none"


def run_view(ws: Workspace, kind: str, argv: tuple[str, ...], env: dict[str, str], *, python: str,
             read: tuple[Path, ...] = (), home: Path | None = None, open_network: bool = False) -> RunView | None:
    """The view for a run of this kind, running argv with the project's interpreter `python` (for its tests), or None
    where runs read the machine."""
    from shared.isolation.reach import install_roots, toolchain

    if kind not in KINDS:
        raise ValueError(f"unknown kind of run {kind!r}; known: {', '.join(KINDS)}")
    if not views_on(ws):
        return None
    forbidden = [Path.home(), ws.root]
    found = [*map(Path, SYSTEM_FOLDERS), *toolchain(argv, env.get("PATH", os.defpath), forbidden),
             *install_roots(Path(python)), *read, *map(Path, ws.config.isolation.read_paths)]
    return RunView(kind, tuple(dict.fromkeys(found)), home, open_network)


def turn_view(ws: Workspace, argv: tuple[str, ...], env: dict[str, str], *, read: tuple[Path, ...],
              home: Path, python: str) -> RunView | None:
    """A turn's view: its row above, with the machine's network where gateway.network = 'open'."""
    return run_view(ws, "turn", argv, env, python=python, read=read, home=home,
                    open_network=ws.config.gateway.network == "open")


def describe(ws: Workspace) -> list[str]:
    """One line per kind, as `banach status` and `banach doctor` say it."""
    if not views_on(ws):
        why = "backend 'none'" if ws.config.isolation.backend == "none" else "isolation.reach = 'machine'"
        return [f"WEAKER MODE ({why}): turns, sensors, checks and environment builds read the whole machine"]
    who = f"as uid {TURN_UID} (nobody)" if os.geteuid() == 0 else "as you, without capabilities"
    return [f"{kind:<11} {what}" for kind, what in KINDS.items()] + [
        f"{', '.join(KINDS)}: each in a view of its own, {who}, with the system folders, its toolchains and the "
        "project's environment read-only; nothing else of the machine"]


@dataclass(frozen=True)
class Confine:
    """How runs of one kind are confined in one workspace: call it with a run's argv and its own folders. In a view
    where runs get one; otherwise by Landlock alone, with `hidden` unreadable and, for `network: none`, a network of
    its own with only loopback."""
    ws: Workspace
    kind: str
    read: tuple[Path, ...] = ()  # what every run of this kind reads: the code, canon's export

    def __call__(self, argv: tuple[str, ...], *, python: str, writable: list[Path], read: tuple[Path, ...] = (),
                 hidden: list[Path] | None = None, network: str = "none", env: dict[str, str] | None = None,
                 relay: tuple[Path, int] | None = None, ports: tuple[int, ...] | None = None) -> tuple[str, ...]:
        """relay (socket, port): the run's only way out is 127.0.0.1:port, relayed to that unix socket (the environment
        build's index proxy), whatever `network` says; ports: TCP to these ports only, where the kernel can."""
        from shared.isolation.policy import sandbox_argv

        view = run_view(self.ws, self.kind, argv, env or {"PATH": os.environ.get("PATH", os.defpath)}, python=python,
                        read=(*self.read, *read), open_network=network == "open" and relay is None)
        return sandbox_argv(self.ws, argv, writable, hidden=None if view else hidden, view=view,
                            offline=network == "none" and relay is None, gateway_relay=relay, connect_ports=ports)
