"""On a cluster node: the gateway as a turn there sees it, a relay to build's gateway on the head through its door.

The head opened the turn's lease (its token, its budgets) before it shipped the turn; the node gets the token and the
door's address, never a key. For the turn the relay is what the gateway is on the head: a unix socket (what the
sandbox's gateway-only network relays 127.0.0.1:PORT to, shared/isolation/netrelay.py) and 127.0.0.1:PORT itself (for
`gateway.network = "open"`), and each connection to either is carried to the head's door (door.py) with `CALL token`.
A `WATCH` connection, opened with the relay, brings the gateway's stop (a rate limit, a spent budget) to the turn's halt
event, so the governor ends the agent here as it would on the head; at the turn's end it brings back the calls as the
head recorded them, which the turn's facts are made from. The head journals those calls itself, from its own record.

    relay = NodeRelay(door, token, provider=..., upstream_model=..., allowance=..., node=node_id)
    governor = LaneGovernor(..., gateway=relay)      # relay.open_turn() returns the head's lease, as a Lease here
    ...
    relay.stop()
"""
from __future__ import annotations

import contextlib
import json
import socket
import tempfile
import threading
from pathlib import Path

from build_loop.gateway.lease import Allowance, Call, Lease
from shared.errors import BanachError
from shared.isolation.netrelay import SAYS, pump

CONNECT_SECONDS = 10.0


class NodeRelayError(BanachError):
    """The node cannot reach the head's gateway door, or the door refused the turn's token."""


def _open(door: tuple[str, int], preamble: str) -> socket.socket:
    """A connection to the door, past its answer."""
    try:
        sock = socket.create_connection(door, timeout=CONNECT_SECONDS)
    except OSError as exc:
        raise NodeRelayError(f"this node cannot reach the gateway's door at {door[0]}:{door[1]} ({exc}); open that port "
                             "from the nodes to the head ([cluster] gateway_port in banach.toml)") from None
    try:
        sock.sendall(preamble.encode() + b"\n")
        answer = b""
        while not answer.endswith(b"\n") and len(answer) < 8:
            chunk = sock.recv(1)
            if not chunk:
                break
            answer += chunk
    except OSError as exc:
        sock.close()
        raise NodeRelayError(f"the gateway's door at {door[0]}:{door[1]} hung up ({exc})") from None
    if answer != b"OK\n":
        sock.close()
        raise NodeRelayError(f"the gateway's door at {door[0]}:{door[1]} refused this turn's token (the head closed the "
                             "turn: it ended, or its node was given up for lost)")
    sock.settimeout(None)
    return sock


class NodeRelay:
    def __init__(self, door: tuple[str, int], token: str, *, provider: str, upstream_model: str, allowance: Allowance,
                 node: str) -> None:
        self.door, self.token = door, token
        self.provider, self.upstream_model, self.allowance = provider, upstream_model, allowance
        self._folder = Path(tempfile.mkdtemp(prefix="banach-relay-"))  # a short path: a unix address has 107 bytes
        self.socket_path = self._folder / "gateway.sock"
        self._unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._unix.bind(str(self.socket_path))
        self.socket_path.chmod(0o666)  # the token is the credential (as on the head); a turn as uid 65534 connects
        self._unix.listen(64)
        self._tcp = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self._tcp.getsockname()[1]
        self.lease: Lease | None = None
        self._watch = _open(door, f"WATCH {token} {node}")
        self._stopping, self._closing, self._answered = threading.Event(), threading.Event(), threading.Event()
        self._answer: dict[str, object] = {}
        for listener in (self._unix, self._tcp):
            threading.Thread(target=self._accept, args=(listener,), name="banach-node-relay", daemon=True).start()
        threading.Thread(target=self._listen, name="banach-node-watch", daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def open_turn(self, provider: str, *, upstream_model: str = "", allowance: Allowance | None = None,
                  log: Path | None = None) -> Lease:
        """The head's lease for this turn (its token and its budgets: the head's, whatever this node computed)."""
        if provider != self.provider:
            raise NodeRelayError(f"the head opened this turn's lease for provider {self.provider!r}, and the turn asks "
                                 f"for {provider!r}: the ladder's rung differs between the head and this node")
        self.lease = Lease(self.token, self.url, provider, self.upstream_model, self.allowance, log)
        return self.lease

    def close(self, lease: Lease, *, settle_seconds: float = 5.0) -> Lease:
        """The turn is over here: the head closes the token and sends back the calls it recorded."""
        if lease.closed:
            return lease
        lease.closed = True
        self._closing.set()
        with contextlib.suppress(OSError):
            self._watch.sendall(b'{"close": true}\n')
        self._answered.wait(settle_seconds + 10.0)
        calls = self._answer.get("calls")
        lease.calls[:] = [Call(**record) for record in calls] if isinstance(calls, list) else []
        if self._answer.get("stop") and not lease.stop_reason:
            lease.stop(str(self._answer["stop"]), str(self._answer.get("message") or ""),
                       self._answer.get("resets_at"))  # type: ignore[arg-type]
        if lease.log is not None:
            with lease.log.open("w", encoding="utf-8") as log:
                log.writelines(json.dumps(call.as_json()) + "\n" for call in lease.calls)
        return lease

    def stop(self) -> None:
        self._stopping.set()
        for sock in (self._unix, self._tcp, self._watch):
            with contextlib.suppress(OSError):
                sock.close()
        self.socket_path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self._folder.rmdir()

    def _accept(self, listener: socket.socket) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self._carry, args=(client,), daemon=True).start()

    def _carry(self, client: socket.socket) -> None:
        with client:
            try:
                upstream = _open(self.door, f"CALL {self.token}")
            except NodeRelayError as exc:
                with contextlib.suppress(OSError):  # an HTTP answer the CLI shows, naming the relay
                    body = json.dumps({"type": "error", "error": {"type": "api_error", "message": f"{SAYS}{exc}"}})
                    client.sendall(f"HTTP/1.1 502 Bad Gateway\r\ncontent-type: application/json\r\ncontent-length: "
                                   f"{len(body)}\r\nconnection: close\r\n\r\n{body}".encode())
                return
            with upstream:
                if client.family == socket.AF_INET:
                    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
                back.start()
                pump(client, upstream)
                back.join()

    def _listen(self) -> None:
        """The head's lines on the WATCH connection: a stop while the turn runs, the calls once it is closed."""
        buffer = b""
        try:
            while True:
                chunk = self._watch.recv(65536)
                if not chunk:
                    break
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    message = json.loads(line or b"{}")
                    if "calls" in message:
                        self._answer = message
                        self._answered.set()
                        return
                    if message.get("stop") and self.lease is not None:
                        self.lease.stop(str(message["stop"]), str(message.get("message") or ""), message.get("resets_at"))
        except (OSError, ValueError):
            pass
        finally:
            self._answered.set()
            if self.lease is not None and not self._closing.is_set():  # the head is gone, or revoked the turn
                self.lease.stop("lost", "the head's gateway door closed this turn's connection")
