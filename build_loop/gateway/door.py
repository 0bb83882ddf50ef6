"""The gateway's door for cluster nodes: the one port of build-loop a node reaches, on the head's cluster address.

A turn on a node cannot reach the head's loopback, where the gateway listens. Its node relay (node_relay.py) connects
here instead, over TCP, and the door lets a connection in only with a turn token the head made for that turn and has
not revoked; the provider's key never leaves this process. Each connection starts with one line:

    CALL <token>\\n              -> "OK\\n", then the connection is the gateway's (its unix socket), byte for byte
    WATCH <token> <node>\\n      -> "OK\\n", then the head writes one JSON line when the gateway stops the turn
                                   ({"stop": reason, "message", "resets_at"}); the node writes {"close": true} when
                                   its turn ends, and the head answers {"calls": [...]}, the turn's calls as the
                                   gateway recorded them, and closes the token
    anything else, an unknown or revoked token -> "NO\\n", closed; nothing is forwarded

A token stops working when the head closes its lease (the turn ended, its node was lost, build-loop stops): the door
then cuts every connection made with it, so a turn left running on a node the cluster gave up for dead spends nothing
more. Every model call is still checked by the gateway itself against the token in its own header (server.py), and
journaled on the head with the turn's budgets. The door adds no encryption: like Ray's own traffic, it belongs on the
cluster's private network (SECURITY.md).
"""
from __future__ import annotations

import contextlib
import json
import queue
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from build_loop.gateway.lease import Lease
from build_loop.gateway.server import Gateway
from shared.isolation.netrelay import pump

PREAMBLE_BYTES = 512
PREAMBLE_SECONDS = 10.0


@dataclass
class Ticket:
    """One attempt of a remote turn, as the door knows it."""

    lease: Lease
    on_node: Callable[[str], None]  # told the node the turn reports from
    sockets: set[socket.socket] = field(default_factory=set)
    node: str = ""


class Door:
    def __init__(self, gateway: Gateway, host: str, port: int = 0) -> None:
        self.gateway = gateway
        self._tickets: dict[str, Ticket] = {}
        self._seen: dict[str, str] = {}  # token -> the node its turn reported in from, kept after the token is revoked
        self._lock = threading.Lock()
        self.refused = 0
        self._listener = socket.create_server((host, port), backlog=128)
        self.host, self.port = host, self._listener.getsockname()[1]
        self._stopping = threading.Event()
        self._go: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        gateway.on_close.append(self.revoke)
        self._thread = threading.Thread(target=self._accept, name="banach-gateway-door", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def admit(self, lease: Lease, on_node: Callable[[str], None] = lambda node: None) -> None:
        with self._lock:
            self._tickets[lease.token] = Ticket(lease, on_node)

    def node_of(self, lease: Lease) -> str:
        """The node the lease's turn reported in from, or ''."""
        with self._lock:
            return self._seen.get(lease.token, "")

    def revoke(self, lease: Lease) -> None:
        """The token stops opening the door, and every connection made with it is cut."""
        with self._lock:
            ticket = self._tickets.pop(lease.token, None)
        for sock in list(ticket.sockets if ticket else ()):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            tickets = list(self._tickets.values())
        for ticket in tickets:
            self.revoke(ticket.lease)

    def open(self, first: Callable[[], None] = lambda: None) -> None:
        """Start letting nodes in; `first` runs on the door's thread before (build restricts it as it restricted itself:
        the thread was made before, and every connection's thread is made by it)."""
        self._go.put(first)

    def _accept(self) -> None:
        self._go.get()()
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), name="banach-door-conn", daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            words = _preamble(client)
            ticket = self._ticket(words[1]) if len(words) >= 2 else None
            if ticket is None or words[0] not in ("CALL", "WATCH") or (words[0] == "WATCH" and len(words) != 3):
                self.refused += 1
                with contextlib.suppress(OSError):
                    client.sendall(b"NO\n")
                return
            ticket.sockets.add(client)
            try:
                client.sendall(b"OK\n")
                if words[0] == "CALL":
                    self._carry(client)
                else:
                    ticket.node = words[2][:128]
                    with self._lock:
                        self._seen[words[1]] = ticket.node
                    ticket.on_node(ticket.node)
                    self._watch(client, ticket)
            except OSError:
                pass
            finally:
                ticket.sockets.discard(client)

    def _ticket(self, token: str) -> Ticket | None:
        with self._lock:
            ticket = self._tickets.get(token)
        return ticket if ticket is not None and not ticket.lease.closed else None

    def _carry(self, client: socket.socket) -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as upstream:
            upstream.connect(str(self.gateway.socket_path))
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
            back.start()
            pump(client, upstream)
            back.join()

    def _watch(self, client: socket.socket, ticket: Ticket) -> None:
        """Tell the node when the gateway stops its turn; on its close, close the lease and send back its calls."""
        lease, told, buffer = ticket.lease, False, b""
        while not self._stopping.is_set():
            if lease.halt.is_set() and not told:
                client.sendall(_line({"stop": lease.stop_reason or "stopped", "message": lease.stop_message,
                                      "resets_at": lease.resets_at}))
                told = True
            readable, _, _ = select.select([client], [], [], 0.2)
            if not readable:
                continue
            chunk = client.recv(4096)
            if not chunk:
                return  # the node went away: the head decides what that means (build_loop/remote.py)
            buffer += chunk
            if len(buffer) > PREAMBLE_BYTES and b"\n" not in buffer:
                return  # a node says only {"close": true}; anything longer is not one
            if b"\n" in buffer:
                if _closes(buffer.split(b"\n", 1)[0]):
                    ticket.sockets.discard(client)  # revoking the token cuts the others, not the one that answers
                    self.gateway.close(lease)
                    client.sendall(_line({"calls": [call.as_json() for call in lease.calls],
                                          "stop": lease.stop_reason, "message": lease.stop_message,
                                          "resets_at": lease.resets_at}))
                return


def _preamble(client: socket.socket) -> list[str]:
    client.settimeout(PREAMBLE_SECONDS)
    data, deadline = b"", time.monotonic() + PREAMBLE_SECONDS
    try:
        while b"\n" not in data and len(data) < PREAMBLE_BYTES and time.monotonic() < deadline:
            chunk = client.recv(PREAMBLE_BYTES - len(data))
            if not chunk:
                break
            data += chunk
    except OSError:
        return []
    finally:
        client.settimeout(None)
    line, newline, rest = data.partition(b"\n")
    if not newline or rest:  # nothing may follow the preamble before the door's answer
        return []
    return line.decode("ascii", errors="replace").split()


def _closes(line: bytes) -> bool:
    try:
        message = json.loads(line or b"{}")
    except ValueError:
        return False
    return isinstance(message, dict) and bool(message.get("close"))


def _line(value: object) -> bytes:
    return json.dumps(value).encode() + b"\n"
