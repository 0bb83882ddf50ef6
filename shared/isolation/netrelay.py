"""The gateway-only network, set up by shared.isolation.sandbox (`--gateway-relay SOCKET:PORT`) before Landlock:

    isolate_network(socket_path, port)

puts the wrapper in a new network namespace that has nothing but loopback (no route anywhere, no host port, no
DNS), brings loopback up, and forks a relay that listens on 127.0.0.1:PORT inside it and carries each connection to
the gateway's unix socket, which a path reaches from any namespace. Then the wrapper drops CAP_SYS_ADMIN and
CAP_NET_ADMIN from its bounding set, so that a program running as root cannot setns(2) back into the host's network
or rewire this one. Anything that cannot be done is refused, never skipped: an open network is not a fallback.

Everything the relay runs is imported here, at the top, never late: the relay runs after a turn started by root has
given up root, when the interpreter's own modules may sit in a folder only root can enter (pyenv's, under /root).
"""
from __future__ import annotations

import errno
import fcntl
import os
import select
import signal
import socket
import struct
import sys
import threading

from shared.errors import IsolationError
from shared.isolation.kernel import call

RELAY_NAME = b"banach-relay"  # the relay's /proc/PID/comm
SAYS = "banach relay: "  # how each line the relay writes on the program's stderr begins
_CLONE_NEWNET, _CLONE_NEWUSER = 0x40000000, 0x10000000
_PR_SET_PDEATHSIG, _PR_SET_NAME, _PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 1, 15, 24, 47, 4
_CAP_NET_ADMIN, _CAP_SYS_ADMIN = 12, 21
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_IFREQ = "16sh22x"  # struct ifreq: the interface name, then the flags in a 24-byte union
_UNIX_PATH_MAX = 107  # sun_path's 108 bytes, less the terminating NUL
_CHUNK = 65536


class NetworkIsolationMissing(IsolationError):
    """This machine cannot give the program a network with only the gateway in it."""


def _sysctl(name: str) -> str:
    try:
        with open("/proc/sys/" + name.replace(".", "/")) as file:
            return file.read().strip()
    except OSError:
        return ""


def why_no_user_namespace(code: int = errno.EPERM) -> str:
    """What on this machine forbids an unprivileged user namespace, as far as its settings and the error tell."""
    if code == errno.ENOSPC:
        return ("the limit on user namespaces is reached (sysctl user.max_user_namespaces, or 32 levels of nesting: "
                "start Banach from a less nested one)")
    if _sysctl("kernel.unprivileged_userns_clone") == "0":
        return "unprivileged user namespaces are disabled (sysctl kernel.unprivileged_userns_clone = 0; set it to 1)"
    if _sysctl("user.max_user_namespaces") == "0":
        return "user namespaces are disabled (sysctl user.max_user_namespaces = 0; raise it)"
    if _sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1":
        return ("AppArmor restricts unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns = 1; "
                "set it to 0, or give this Python an AppArmor profile that allows 'userns,')")
    return ("user namespaces are denied here (a container's seccomp profile or a security module forbids unshare; "
            "allow CLONE_NEWUSER for this user)")


def _enter_empty_network() -> None:
    """A new network namespace; through a new user namespace for a user without CAP_SYS_ADMIN, mapping only the
    user's own uid and gid, to themselves, so that files keep their real owner."""
    try:
        call("unshare", _CLONE_NEWNET)
        return
    except OSError as exc:
        if exc.errno != errno.EPERM:
            raise NetworkIsolationMissing(f"cannot create a network namespace: {exc.strerror}") from None
    uid, gid = os.geteuid(), os.getegid()
    try:
        call("unshare", _CLONE_NEWUSER | _CLONE_NEWNET)
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as file:
                file.write(text)
    except OSError as exc:
        raise NetworkIsolationMissing(f"cannot create a network namespace: no CAP_SYS_ADMIN here, and a user namespace failed "
                                      f"({exc.strerror}): {why_no_user_namespace(exc.errno)}; or run as root") from None


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        name, flags = struct.unpack(_IFREQ, fcntl.ioctl(sock, _SIOCGIFFLAGS, struct.pack(_IFREQ, b"lo", 0)))
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack(_IFREQ, name, flags | _IFF_UP))


def pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy until source's end of file, then pass the half-close on; on an error, end both ways."""
    try:
        while data := source.recv(_CHUNK):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _carry(client: socket.socket, gateway: str) -> None:
    with client, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as upstream:
        try:
            upstream.connect(gateway)
        except OSError as exc:
            print(f"{SAYS}cannot reach the gateway at {gateway}: {exc.strerror}", file=sys.stderr, flush=True)
            return
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a streamed token goes out as it comes
        back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
        back.start()
        pump(client, upstream)
        back.join()


def _serve(listener: socket.socket, gateway: str, parent: int) -> None:
    """The relay process: lives exactly as long as the thread that forked it, the wrapper that becomes the program."""
    call("prctl", _PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent ended before the line above
        return
    call("prctl", _PR_SET_NAME, RELAY_NAME, 0, 0, 0)
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # a stop for the group is for the program to heed
        signal.signal(number, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    threading.Thread(target=_end_with, args=(parent,), daemon=True).start()
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_carry, args=(client, gateway), daemon=True).start()


def _end_with(parent: int) -> None:
    """End this relay when the program ends. The parent-death signal alone does not do it under Landlock's signal
    scope: the program, in a domain below the relay's, may not signal it, not even by dying."""
    try:
        handle = os.pidfd_open(parent)
    except OSError:  # gone already, or no pidfd (Linux < 5.3): look every half second
        while os.getppid() == parent:
            select.select([], [], [], 0.5)
        os._exit(0)
    select.select([handle], [], [])  # readable once the parent has ended
    os._exit(0)


def _start_relay(gateway: str, port: int) -> None:
    """Bound and listening before this returns, so the program's first connection cannot come too early."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # close-on-exec: the program does not inherit it
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    parent = os.getpid()
    if os.fork() == 0:
        try:
            _serve(listener, gateway, parent)
        except BaseException as exc:  # noqa: BLE001 - reported, and the process ends here either way
            print(f"{SAYS}stopped: {exc!r}", file=sys.stderr, flush=True)
        finally:
            os._exit(0)  # never return into the wrapper's code
    listener.close()


def _drop_network_admin() -> None:
    for capability in (_CAP_NET_ADMIN, _CAP_SYS_ADMIN):
        call("prctl", _PR_CAPBSET_DROP, capability, 0, 0, 0)
    call("prctl", _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


def relay_failure(stderr: str) -> str:
    """The first line the relay wrote on a program's stderr, or ''. The program may write such a line too, so it is
    an explanation for a person, never a verdict."""
    return next((line.strip() for line in stderr.splitlines() if line.startswith(SAYS)), "")


def check_relay(gateway: str, port: int) -> None:
    """Refuses what no relay can serve: a port out of range, a socket path too long for a unix address."""
    if not 0 < port < 65536:
        raise NetworkIsolationMissing(f"the relay's TCP port must be 1..65535, got {port}")
    if not gateway or len(os.fsencode(gateway)) > _UNIX_PATH_MAX:
        raise NetworkIsolationMissing(f"the gateway's socket path must be 1..{_UNIX_PATH_MAX} bytes (a unix socket "
                                      f"address), got {gateway!r}: put the socket in a shorter folder")


def isolate_network(gateway: str, port: int) -> None:
    """Leave this process with a network where 127.0.0.1:port reaches the unix socket `gateway` and nothing else is
    reachable; raises NetworkIsolationMissing with what this machine lacks. Call it while single-threaded."""
    check_relay(gateway, port)
    _enter_empty_network()
    serve_gateway(gateway, port)
    try:
        _drop_network_admin()
    except OSError as exc:
        raise NetworkIsolationMissing(f"in the new network namespace, could not drop CAP_SYS_ADMIN and CAP_NET_ADMIN: "
                                      f"{exc.strerror}") from None


def serve_gateway(gateway: str, port: int) -> None:
    """In a network namespace just made (and while this process may still configure it): loopback up, and the relay
    from 127.0.0.1:port to the gateway's socket listening."""
    check_relay(gateway, port)
    step = "bring loopback up"
    try:
        loopback_up()
        step = f"listen on 127.0.0.1:{port}"
        _start_relay(gateway, port)
    except OSError as exc:
        hint = f": {why_no_user_namespace()}" if exc.errno == errno.EPERM and os.geteuid() != 0 else ""
        raise NetworkIsolationMissing(f"in the new network namespace, could not {step}: {exc.strerror}{hint}") from None


def cut_off() -> None:
    """Leave this process with a network of its own where only loopback answers: no host port, no outside address, no
    DNS (a check's own local server still works). Raises NetworkIsolationMissing with what this machine lacks. Call it
    while single-threaded."""
    _enter_empty_network()
    try:
        loopback_up()
        _drop_network_admin()
    except OSError as exc:
        raise NetworkIsolationMissing(f"in the new network namespace, could not bring loopback up: {exc.strerror}") from None
