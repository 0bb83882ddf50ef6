"""A turn's confinement tried for real before a turn is spent on it (`banach doctor`, `build-loop check-agent`): the
same wrapper, view, uid and gateway relay a turn gets, around a program that talks to a gateway that answers.

    with answering_gateway() as socket_path:
        why = try_turn_network(socket_path, view=True)   # '' when the program inside reached the gateway

Each piece alone can work while the whole does not: issue 38's relay imported a module after root was given up, so
a view without a relay and a relay without a view both worked, and every real turn reached nothing."""
from __future__ import annotations

import os
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from shared.isolation.netrelay import SAYS
from shared.isolation.view import SYSTEM_FOLDERS, TURN_UID

PORT = 8080  # inside the turn's network every port is free
_ANSWER = b"pong"

# Run inside: through the relay to the gateway, then what the program is and sees.
PROBE = f"""
import os, socket
with socket.create_connection(("127.0.0.1", {PORT}), timeout=10) as gateway:
    gateway.sendall(b"ping")
    print(gateway.recv(4).decode(), os.getuid(), *(name for _, name in socket.if_nameindex()))
"""


@contextmanager
def answering_gateway() -> Iterator[Path]:
    """A unix socket standing in for the gateway: each connection that says 'ping' is answered 'pong'."""
    with tempfile.TemporaryDirectory(prefix="banach-trial-") as folder, \
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        path = Path(folder) / "gateway.sock"
        listener.bind(str(path))
        listener.listen(16)
        stop = threading.Event()

        def answer() -> None:
            while not stop.is_set():
                try:
                    connection, _ = listener.accept()
                except OSError:
                    return
                with connection:
                    connection.settimeout(10)
                    try:
                        if connection.recv(4) == b"ping":
                            connection.sendall(_ANSWER)
                    except OSError:
                        pass

        answering = threading.Thread(target=answer, name="trial-gateway", daemon=True)
        answering.start()
        try:
            yield path
        finally:
            stop.set()
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as wake:  # ends the accept
                try:
                    wake.connect(str(path))
                except OSError:
                    pass
            answering.join(timeout=10)


def interpreter_folders() -> list[str]:
    """What a program needs to run this interpreter in a view: its prefix and its base prefix (a venv's and the Python
    it was made from)."""
    return list(dict.fromkeys(os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)))


def turn_flags(socket_path: Path, work: Path, *, view: bool) -> list[str]:
    """The wrapper's flags for a program confined as a turn is: in a view of the system folders and this interpreter
    (or, without a view, in a network namespace only), with the relay to socket_path, writing only `work`."""
    flags = ["--write", str(work), "--gateway-relay", f"{socket_path}:{PORT}"]
    if view:
        flags += ["--view", *(flag for folder in [*SYSTEM_FOLDERS, *interpreter_folders()] for flag in ("--read", folder))]
    return flags


def try_turn_network(socket_path: Path, *, view: bool) -> str:
    """'' when a program confined as a turn is (view or not, as configured) reaches the gateway through its relay, with
    loopback its only interface and, under root, as uid TURN_UID; otherwise what went wrong, in the wrapper's words."""
    from shared.isolation.policy import wrapped
    from shared.process import Request, run

    with tempfile.TemporaryDirectory(prefix="banach-trial-work-") as work:
        argv = wrapped(turn_flags(socket_path, Path(work), view=view), (sys.executable, "-I", "-S", "-c", PROBE))
        outcome = run(Request(argv, cwd=Path(work), timeout=30))
    expected_uid = TURN_UID if view and os.geteuid() == 0 else os.geteuid()
    if outcome.ok and outcome.stdout.split() == [_ANSWER.decode(), str(expected_uid), "lo"]:
        return ""
    said = [line.strip() for line in outcome.stderr.splitlines() if line.strip()]
    ours = [line for line in said if line.startswith((SAYS, "shared.isolation."))]  # the cause, before its effects
    if ours or said:
        return (ours or said)[0]
    if outcome.timed_out:
        return "the program inside did not finish within 30 s"
    return f"the program inside ended with exit code {outcome.returncode} and printed {outcome.stdout.strip()!r}"
