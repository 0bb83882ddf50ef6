"""Landlock through our own binding of its three system calls, and the wrapper every sandboxed child runs in:

    python -I -m shared.isolation.sandbox [--write DIR]... [--hide DIR]... [--scope] [--connect-port N]...
                                          [--no-network] [--gateway-relay SOCKET:PORT | --offline]
                                          [--view [--read DIR]... [--home DIR --home-path PATH] [--host-network]
                                                  [--no-landlock]]
                                          -- PROGRAM ARGS

which restricts itself, then execs PROGRAM. What a ruleset can restrict grows with the kernel's Landlock ABI:
1 (Linux 5.13) writes and reads beneath paths, 2 (5.19) links and renames across folders, 3 (6.2) truncate,
4 (6.7) TCP bind and connect by port, 5 (6.10) device ioctls, 6 (6.12) signals and abstract unix sockets,
7 (6.15) audit flags only. File rights shrink to what the kernel knows (best effort, as the Landlock docs advise);
a network rule or scope the caller asked for and the kernel lacks is refused, never silently dropped.

--view first moves the wrapper into a view of its own (shared/isolation/view.py): only the --read folders (read-only),
the --write folders and a fresh HOME are there, its own processes, an unprivileged id, loopback only (the gateway with
--gateway-relay, the machine's network with --host-network). Landlock then allows reading only those folders too.

Without --view, --gateway-relay first moves the wrapper into a network namespace with only loopback, where
127.0.0.1:PORT is a relay to the unix socket SOCKET and nothing else answers (shared/isolation/netrelay.py). The
namespace is the boundary: inside it the program may still bind and connect on loopback (a test suite's own local
server works). `--connect-port PORT` on top
narrows TCP to the relay alone with Landlock, where the kernel has network rules. --offline makes the same namespace
without a relay: a check whose requirement does not say `network: open` reaches nothing but its own loopback.

Kept free of heavy imports (no pydantic, no config, no dataclasses): every sandboxed child pays for this start-up.
"""
from __future__ import annotations

import ctypes
import errno
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from shared.errors import IsolationError
from shared.isolation.kernel import call

if TYPE_CHECKING:  # typing costs every sandboxed child a few milliseconds at start-up
    from typing import TypedDict

    from shared.isolation.view import View

    class LandlockFeatures(TypedDict):
        abi: int
        net: bool
        scopes: bool
        missing: list[str]

ALWAYS_WRITABLE = ("/dev/null", "/dev/tty")
NET_ABI, SCOPE_ABI = 4, 6
NO_LANDLOCK = ("this kernel has no Landlock (needs Linux >= 5.13 on x86_64 or aarch64, with landlock in CONFIG_LSM "
               "or the lsm= boot parameter)")

# create_ruleset, add_rule, restrict_self: the generic syscall table, shared by x86_64 and aarch64
_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_DUMPABLE = 4
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2

_FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 1, 1 << 2, 1 << 3
_FS_MAKE_AND_REMOVE = sum(1 << bit for bit in range(4, 13))  # REMOVE_DIR .. MAKE_SYM
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1


class LandlockMissing(IsolationError):
    """The kernel has no Landlock, or lacks a restriction the caller asked for."""


class LandlockFailed(IsolationError):
    """A Landlock system call failed on a kernel that has Landlock."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel's struct is packed: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


def not_dumpable() -> None:
    """No process of the same user (without CAP_SYS_PTRACE) may trace this one or open its /proc/PID/fd, mem or
    environ: a loop's descriptors (report channels, journals) and memory stay its own. Linux only; a no-op elsewhere."""
    if sys.platform.startswith("linux"):
        call("prctl", _PR_SET_DUMPABLE, 0, 0, 0, 0)


def _syscall(index: int, *args: object) -> int:
    return call("syscall", _SYSCALLS[os.uname().machine][index], *args)


_abi: int | None = None


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing, disabled, or this machine type is unknown here."""
    global _abi
    if _abi is None:
        _abi = 0
        if sys.platform.startswith("linux") and os.uname().machine in _SYSCALLS:
            try:
                _abi = _syscall(0, None, 0, _CREATE_RULESET_VERSION)
            except OSError:  # ENOSYS: not built in; EOPNOTSUPP: not in the boot's lsm= list
                pass
    return _abi


def landlock_features() -> LandlockFeatures:
    """What this kernel's Landlock can enforce, and a sentence for each thing it cannot (for `banach doctor`)."""
    abi = landlock_abi()
    missing = [NO_LANDLOCK] if abi < 1 else []
    if abi < NET_ABI:
        missing.append("Landlock network rules (ABI 4, Linux >= 6.7): the agent's TCP connections cannot be limited")
    if abi < SCOPE_ABI:
        missing.append("Landlock scopes (ABI 6, Linux >= 6.12): a sandboxed agent can signal Banach's processes of the "
                       "same user and connect to their abstract unix sockets")
    return {"abi": abi, "net": abi >= NET_ABI, "scopes": abi >= SCOPE_ABI, "missing": missing}


def _write_rights(abi: int, *, directory: bool) -> int:
    rights = _FS_WRITE_FILE
    if directory:
        rights |= _FS_MAKE_AND_REMOVE | (_FS_REFER if abi >= 2 else 0)
    return rights | (_FS_TRUNCATE if abi >= 3 else 0)


def _read_rules(hidden: list[Path]) -> list[tuple[Path, bool]]:
    """Paths to grant reading so that everything is readable except beneath `hidden`.

    Landlock only allows, so for each folder on the way to a hidden path we grant listing the folder
    itself, and reading every entry beside the one that leads to the hidden path. Returns (path, whole):
    whole means reading files and folders beneath it, otherwise listing that folder only.
    """
    hidden = [h.resolve() for h in hidden]
    on_the_way = {ancestor for h in hidden for ancestor in h.parents}
    rules: list[tuple[Path, bool]] = []
    for folder in sorted(on_the_way):
        rules.append((folder, False))
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            resolved = entry.resolve() if entry.is_symlink() else entry
            if resolved in on_the_way or resolved in hidden or entry in on_the_way or entry in hidden:
                continue
            rules.append((entry, True))
    return rules


def _allow_path(ruleset: int, path: Path, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = _PathBeneathAttr(rights, fd)
        _syscall(1, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)
    finally:
        os.close(fd)


def _allow_port(ruleset: int, port: int) -> None:
    rule = _NetPortAttr(_NET_CONNECT_TCP, port)
    _syscall(1, ruleset, _RULE_NET_PORT, ctypes.byref(rule), 0)


def _ruleset(abi: int, fs: int, net: int, scoped: int) -> int:
    """A ruleset fd; the attribute struct is cut to the fields this ABI knows (older kernels reject longer ones)."""
    fields = 1 if abi < NET_ABI else 2 if abi < SCOPE_ABI else 3
    return _syscall(0, ctypes.byref(_RulesetAttr(fs, net, scoped)), 8 * fields, 0)


def _check_supported(abi: int, *, scoped: bool, connect_ports: tuple[int, ...] | None) -> None:
    if scoped and abi < SCOPE_ABI:
        raise LandlockMissing(f"signal and abstract unix socket scopes need Landlock ABI {SCOPE_ABI} (Linux >= 6.12); this "
                              f"kernel has ABI {abi}. Drop --scope (a sandboxed child can then signal processes outside), "
                              "or upgrade the kernel")
    if connect_ports is not None and abi < NET_ABI:
        raise LandlockMissing(f"network rules need Landlock ABI {NET_ABI} (Linux >= 6.7); this kernel has ABI {abi}. "
                              "Leave the network unrestricted, or upgrade the kernel")
    bad = [port for port in connect_ports or () if not 0 < port < 65536]
    if bad:
        raise LandlockFailed(f"TCP ports must be 1..65535, got {bad}")


def restrict_writes(paths: Sequence[Path], hidden: Sequence[Path] = (), *,
                    scope_signals: bool = False, scope_abstract_unix: bool = False,
                    connect_ports: tuple[int, ...] | None = None, readable: Sequence[Path] | None = None) -> int:
    """Restrict this thread (and every thread and child started after) to writing only beneath paths, and, when
    hidden is given, to reading everything except beneath those paths. Returns the kernel's Landlock ABI.

    readable: reading only beneath these paths and the writable ones (listing any folder stays allowed); for a
    program in its own view (shared/isolation/view.py), where it is the second layer behind the mounts.

    scope_signals: no signals to processes outside this sandbox (its own children stay reachable).
    scope_abstract_unix: no connecting to abstract unix sockets bound outside this sandbox.
    connect_ports: None leaves the network alone; a tuple allows TCP connects to those ports only (any address,
    Landlock filters by port) and no TCP binds. UDP and other protocols are not restricted by Landlock.
    """
    abi = landlock_abi()
    if abi < 1:
        raise LandlockMissing(NO_LANDLOCK)
    _check_supported(abi, scoped=scope_signals or scope_abstract_unix, connect_ports=connect_ports)
    reads = (_FS_READ_DIR | _FS_READ_FILE) if hidden or readable is not None else 0
    net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if connect_ports is not None else 0
    scoped = (_SCOPE_SIGNAL if scope_signals else 0) | (_SCOPE_ABSTRACT_UNIX_SOCKET if scope_abstract_unix else 0)
    step = "create a ruleset"
    try:
        ruleset = _ruleset(abi, _write_rights(abi, directory=True) | reads, net, scoped)
        try:
            step = "allow writing"
            for path in [*map(Path, paths), *map(Path, ALWAYS_WRITABLE)]:
                if path.is_dir():
                    _allow_path(ruleset, path, _write_rights(abi, directory=True) | reads)
                elif path.exists():
                    _allow_path(ruleset, path, _write_rights(abi, directory=False) | (_FS_READ_FILE if reads else 0))
            step = "allow reading"
            rules = _read_rules(list(hidden)) if readable is None else [(Path("/"), False), *((p, True) for p in readable)]
            for path, whole in rules:
                rights = _FS_READ_DIR if not whole else (_FS_READ_DIR | _FS_READ_FILE) if path.is_dir() else _FS_READ_FILE
                try:
                    _allow_path(ruleset, path, rights)
                except OSError:
                    continue  # vanished, or a socket we cannot open: it stays unreadable, which is safe
            step = "allow TCP ports"
            for port in connect_ports or ():
                _allow_port(ruleset, port)
            step = "enforce the ruleset"
            call("prctl", _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            _syscall(2, ruleset, 0)
        finally:
            os.close(ruleset)
    except OSError as exc:
        nested = exc.errno == errno.E2BIG
        hint = " (16 nested sandboxes is the kernel's limit: start it from a less nested parent)" if nested else ""
        raise LandlockFailed(f"Landlock ABI {abi}: could not {step}: {exc}{hint}") from None
    return abi


_VALUE_FLAGS = ("--write", "--hide", "--connect-port", "--gateway-relay", "--read", "--home", "--home-path")
USAGE = ("usage: python -I -m shared.isolation.sandbox [--write DIR]... [--hide DIR]... [--scope] [--connect-port N]... "
         "[--no-network] [--gateway-relay SOCKET:PORT | --offline] [--view [--read DIR]... [--home DIR --home-path PATH] "
         "[--host-network] [--no-landlock]] -- PROGRAM [ARGS]")


def _parse(options: list[str]) -> dict[str, list[str]]:
    """Flags to their values (switches map to []); a ValueError names an unknown flag, since ignoring a misspelt
    restriction would run the child with less of it than asked."""
    found: dict[str, list[str]] = {}
    index = 0
    while index < len(options):
        flag = options[index]
        if flag in _VALUE_FLAGS:
            if index + 1 >= len(options):
                raise ValueError(f"{flag} needs a value")
            found.setdefault(flag, []).append(options[index + 1])
            index += 2
        elif flag in ("--scope", "--no-network", "--offline", "--view", "--host-network", "--no-landlock"):
            found[flag] = []
            index += 1
        else:
            raise ValueError(f"unknown option {flag!r}")
    return found


def _gateway_relay(flags: dict[str, list[str]]) -> tuple[str, int] | None:
    values = flags.get("--gateway-relay", [])
    if len(values) > 1:
        raise ValueError("--gateway-relay given more than once; the program gets one gateway")
    if "--no-network" in flags and values:
        raise ValueError("--no-network and --gateway-relay contradict each other; give one")
    if "--offline" in flags and (values or "--view" in flags):
        raise ValueError("--offline is for a program without --gateway-relay or --view, which make their own network")
    if not values:
        return None
    path, _, port = values[0].rpartition(":")
    if not path or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--gateway-relay wants SOCKET_PATH:PORT with a port in 1..65535, got {values[0]!r}")
    return path, int(port)


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print(USAGE, file=sys.stderr)
        return 2
    split = argv.index("--")
    command = argv[split + 1 :]
    try:
        flags = _parse(argv[:split])
        ports = tuple(int(port) for port in flags.get("--connect-port", []))
        relay = _gateway_relay(flags)
    except ValueError as exc:
        print(f"shared.isolation.sandbox: {exc}\n{USAGE}", file=sys.stderr)
        return 2
    if not command:
        print("shared.isolation.sandbox: no program given after '--'", file=sys.stderr)
        return 2
    if ports and "--no-network" in flags:
        print("shared.isolation.sandbox: --no-network and --connect-port contradict each other; give one", file=sys.stderr)
        return 2
    scope = "--scope" in flags
    connect_ports = ports if ports or "--no-network" in flags else None
    writable = [Path(p) for p in flags.get("--write", [])]
    try:
        view = _view(flags, relay)
        if view is not None:
            from shared.isolation import view as views

            views.enter(view)  # from here on: the program's namespace, its first process
            writable += [Path("/tmp"), Path("/dev/shm"), *([Path(view.home[1])] if view.home else [])]
            readable = [Path(target) for _, target, _ in view.binds()] + [Path("/proc"), Path("/dev")]
        elif relay is not None:
            from shared.isolation.netrelay import isolate_network

            isolate_network(*relay)
        elif "--offline" in flags:
            from shared.isolation.netrelay import cut_off

            cut_off()
        if "--no-landlock" not in flags:  # the users backend, whose accounts limit writes; a view is still given
            restrict_writes(writable, [Path(p) for p in flags.get("--hide", [])], scope_signals=scope,
                            scope_abstract_unix=scope, connect_ports=connect_ports,
                            readable=readable if view is not None else None)
    except (IsolationError, ValueError) as exc:
        print(f"shared.isolation.sandbox: refusing to run {command[0]}: {exc}", file=sys.stderr)
        return 126
    if view is not None:
        views.drop_capabilities()
        views.init(command)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"shared.isolation.sandbox: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127
    return 0  # not reached


def _view(flags: dict[str, list[str]], relay: tuple[str, int] | None) -> View | None:
    """The program's own view (--view, with --read, --write, --home and --home-path, --host-network), or None."""
    if "--view" not in flags:
        if "--no-landlock" in flags:
            raise ValueError("--no-landlock is for --view only: without both, the program would run unconfined")
        return None
    from shared.isolation.view import View

    homes, home_paths = flags.get("--home", []), flags.get("--home-path", [])
    if len(homes) != len(home_paths) or len(homes) > 1:
        raise ValueError("--home FOLDER and --home-path PATH go together, once")
    network = "host" if "--host-network" in flags else "gateway" if relay else "none"
    return View(flags.get("--read", []), flags.get("--write", []), (homes[0], home_paths[0]) if homes else None,
                network, relay)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
