"""The gateway: an aiohttp server in a thread of build-loop, on 127.0.0.1 and on a Unix socket (for the relay of a
turn whose network is gateway-only), forwarding each call of a turn to its provider with the real key.

    agent CLI --(turn token)--> gateway --(provider key)--> provider
                                  |-- bodies --> BodyStore (by sha256)
                                  |-- one Call per model call --> the turn's calls.jsonl, then build's journal
                                  '-- 429/529, budget spent --> the turn's halt event: build stops the agent

A token is made for one turn (`open_turn`) and forgotten when it ends (`close`): after that, and for any other
token, the gateway answers 401 and forwards nothing. Responses are streamed to the client as they arrive; the copy
kept for the record is assembled beside."""
from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from aiohttp import web

from build_loop.gateway import wires
from build_loop.gateway.lease import Allowance, Call, Lease
from build_loop.gateway.meter import RunMeter
from shared.bodies import BodyStore
from shared.config import GatewayConfig, PriceConfig, ProviderConfig
from shared.loop_thread import LoopThread


@dataclass
class Exchange:
    """One call as it passes through the gateway: what the client sent, what went upstream, what came back."""

    lease: Lease
    provider: ProviderConfig
    path: str  # as the client asked
    model_call: bool
    requested: str | None  # the model the client asked for
    started: float  # monotonic
    body: bytes  # as sent upstream (the client's, with the rung's model and a usage request where needed)
    model: str | None = None  # as sent upstream
    status: int = 0
    content_type: str = ""
    headers: dict[str, str] = field(default_factory=dict)  # the provider's, lowercase
    received: bytearray = field(default_factory=bytearray)
    first_byte: float | None = None


def cost_of(usage: wires.Usage, price: PriceConfig | None) -> float | None:
    if price is None:
        return None
    return round((usage.input_tokens * price.input + usage.output_tokens * price.output
                  + usage.cache_read_tokens * price.cache_read + usage.cache_write_tokens * price.cache_write) / 1e6, 6)


class Gateway:
    def __init__(self, config: GatewayConfig, keys: dict[str, str], store: BodyStore, *,
                 socket_path: Path | None = None) -> None:
        self.config = config
        self._keys = keys
        self.store = store
        self._leases: dict[str, Lease] = {}
        self._lock = threading.Lock()
        self._thread = LoopThread("banach-gateway")
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        # a socket path has 107 bytes at most: a deep workspace gets a folder in /tmp instead
        self._socket_dir: Path | None = None
        if socket_path is None or len(bytes(socket_path)) >= 100:
            self._socket_dir = Path(tempfile.mkdtemp(prefix="banach-gw-"))
            socket_path = self._socket_dir / "gateway.sock"
        self.socket_path: Path = socket_path
        self.port = 0
        self.refused = 0  # calls with no valid token
        # the run's budgets and each provider's rate limit, across every turn in flight here or on a cluster node
        self.meter = RunMeter(config.max_run_tokens, config.max_run_cost_usd)
        self.on_close: list[Callable[[Lease], None]] = []  # told when a token stops working (the cluster's door)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # life cycle -------------------------------------------------------------------------------------------------
    def start(self) -> Gateway:
        self.port = self._thread.start(self._serve())
        return self

    def run_on_loop(self, function: Callable[[], object]) -> None:
        """Call function on the gateway's own thread (build restricts that thread too, once it has restricted itself)."""
        async def on_loop() -> None:
            function()

        self._thread.call(on_loop())

    def stop(self) -> None:
        if not self._thread.running:
            return
        self._thread.stop(self._shutdown())
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
        else:
            self.socket_path.unlink(missing_ok=True)

    def __enter__(self) -> Gateway:
        return self if self._thread.running else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _serve(self) -> int:
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        # No proxy from the environment (trust_env off): the gateway goes exactly where banach.toml says. A call may
        # stream for as long as its answer takes, but not sit silent for longer than upstream_timeout.
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=self.config.upstream_timeout)
        self._session = aiohttp.ClientSession(timeout=timeout, auto_decompress=False, trust_env=False)
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.socket_path.unlink(missing_ok=True)  # left by a build-loop that was killed
        await web.UnixSite(self._runner, str(self.socket_path)).start()
        self.socket_path.chmod(0o666)  # the token is the credential; an agent under the users backend connects too
        return int(self._runner.addresses[0][1])

    async def _shutdown(self) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    # turns ------------------------------------------------------------------------------------------------------
    def open_turn(self, provider: str, *, upstream_model: str = "", allowance: Allowance | None = None,
                  log: Path | None = None) -> Lease:
        if provider not in self.config.providers:
            raise KeyError(provider)
        lease = Lease(secrets.token_urlsafe(32), self.url, provider, upstream_model, allowance or Allowance(), log)
        with self._lock:
            self._leases[lease.token] = lease
        return lease

    def close(self, lease: Lease, *, settle_seconds: float = 5.0) -> Lease:
        """The token stops working. A call still in flight (its agent was stopped mid-answer) gets a few seconds to be
        recorded; one that takes longer is still written to the turn's log when it ends, not to lease.calls."""
        with self._lock:
            lease.closed = True
            self._leases.pop(lease.token, None)
        for told in self.on_close:
            told(lease)
        deadline = time.monotonic() + settle_seconds
        while lease.in_flight and time.monotonic() < deadline:
            time.sleep(0.02)
        self.store.flush()  # the turn's bodies are on disk before anyone reads its transcript
        return lease

    # forwarding -------------------------------------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        token = wires.token_from({k.lower(): v for k, v in request.headers.items()}, request.query)
        with self._lock:
            lease = self._leases.get(token or "")
        if lease is None:
            self.refused += 1
            return _error(401, "authentication_error", "Banach gateway: no valid turn token (a token is valid for one "
                          "agent turn only)")
        raw = await request.read()
        call = Exchange(lease, self.config.providers[lease.provider], request.path,
                        wires.is_model_call(request.method, request.path), wires.requested_model(request.path, raw),
                        time.monotonic(), raw)
        limited = self.meter.limited_until(lease.provider) if call.model_call else None
        if limited is not None:  # another turn was answered 429 by this provider: its limit holds for every turn
            message = f"the provider {lease.provider} is rate limited until {time.strftime('%H:%M:%S', time.localtime(limited))}"
            call.model, call.status = call.requested, 429
            self._record(call, resets_at=limited, error=f"refused: {message}")
            lease.stop("rate_limited", message, limited)
            return _error(429, "rate_limit_error", f"Banach gateway: {message}")
        refused = (lease.over_budget() or self.meter.spent() if call.model_call else "") or (
            (lease.stop_message or "the turn is being stopped") if lease.halt.is_set() else "")
        if refused:
            call.model, call.status = call.requested, 403
            self._record(call, error=f"refused: {refused}")
            return _error(403, "permission_error", f"Banach gateway: {refused}")
        lease.in_flight += 1
        try:
            return await self._forward(request, call)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            message = f"cannot reach {call.provider.base_url}: {type(exc).__name__}: {exc}"
            call.status, call.received = 502, bytearray()
            self._record(call, error=message)
            return _error(502, "api_error", f"Banach gateway: {message}")
        finally:
            lease.in_flight -= 1

    async def _forward(self, request: web.Request, call: Exchange) -> web.StreamResponse:
        """The call upstream, with the rung's model and the provider's key; the answer passed on as it arrives."""
        lease, provider = call.lease, call.provider
        path = call.path
        if lease.upstream_model and call.model_call:
            path, call.body = wires.with_model(path, call.body, lease.upstream_model)
        if call.model_call:
            call.body = wires.wants_usage_in_stream(path, call.body)
        call.model = wires.requested_model(path, call.body)
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() not in wires.HOP_HEADERS and k.lower() not in wires.CLIENT_AUTH_HEADERS}
        headers.update(wires.upstream_auth(provider.wire, provider.auth, self._keys.get(lease.provider, "")))
        headers["accept-encoding"] = "identity"  # the record needs the bytes as the model sent them
        query = {k: v for k, v in request.query.items() if k != "key"}
        assert self._session is not None
        async with self._session.request(request.method, provider.base_url.rstrip("/") + path, params=query,
                                         headers=headers, data=call.body, allow_redirects=False) as upstream:
            reply = web.StreamResponse(status=upstream.status, reason=upstream.reason, headers={
                k: v for k, v in upstream.headers.items() if k.lower() not in wires.HOP_HEADERS})
            await reply.prepare(request)
            try:
                async for chunk in upstream.content.iter_any():
                    if call.first_byte is None:
                        call.first_byte = time.monotonic()
                    call.received += chunk
                    await reply.write(chunk)
            except (ConnectionResetError, aiohttp.ClientConnectionResetError):
                pass  # the agent went away mid-answer (stopped, or gave up): what arrived is still recorded
            call.status, call.content_type = upstream.status, upstream.headers.get("content-type", "")
            call.headers = {k.lower(): v for k, v in upstream.headers.items()}
        # recorded before the client sees the end, so that a turn that ends on this answer finds it on the record
        self._settle(call)
        with contextlib.suppress(ConnectionResetError, aiohttp.ClientConnectionResetError):
            await reply.write_eof()
        return reply

    def _settle(self, call: Exchange) -> None:
        """Record the answer; a rate limit, or a budget now spent, stops the turn."""
        data = bytes(call.received)
        usage = wires.usage_of(data, call.content_type) if call.model_call and call.status < 400 else None
        limited = wires.is_limited(call.status, data)
        reset = wires.resets_at(call.headers, data, time.time()) if limited else None
        self._record(call, usage=usage, resets_at=reset)
        if limited:
            message = f"the provider answered {call.status} ({call.provider.base_url})"
            self.meter.limit(call.lease.provider, reset)
            for lease in self._open_leases():  # the limit is the key's: every turn on this provider ends with it
                if lease.provider == call.lease.provider:
                    lease.stop("rate_limited", message if lease is call.lease else f"another turn's call: {message}", reset)
        elif call.model_call and (why := call.lease.over_budget()):
            call.lease.stop("budget", why)
        elif call.model_call and (why := self.meter.spent()):
            for lease in self._open_leases():  # the run's budget: every turn in flight stops
                lease.stop("budget", why)

    def _open_leases(self) -> list[Lease]:
        with self._lock:
            return [*self._leases.values()]

    def lease_of(self, token: str) -> Lease | None:
        """The open lease this token belongs to, or None."""
        with self._lock:
            return self._leases.get(token)

    def _record(self, call: Exchange, *, usage: wires.Usage | None = None, resets_at: float | None = None,
                error: str = "") -> None:
        lease, usage = call.lease, usage or wires.Usage()
        price = self.config.prices.get(call.model or "") if call.model_call else None
        started, first_byte = call.started, call.first_byte
        record = Call(
            seq=len(lease.calls) + 1, path=call.path, provider=lease.provider, wire=call.provider.wire,
            model_call=call.model_call, requested_model=call.requested, model=call.model, status=call.status,
            stream="event-stream" in call.content_type, input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens, cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost_usd=cost_of(usage, price) if usage.total else (0.0 if price else None),
            latency_ms=round((time.monotonic() - started) * 1000, 3),
            first_byte_ms=round((first_byte - started) * 1000, 3) if first_byte is not None else None,
            request_digest=self.store.put_later(call.body), response_digest=self.store.put_later(bytes(call.received)),
            resets_at=resets_at, error=error)
        lease.calls.append(record)
        self.meter.add(record)
        if lease.log is not None:  # durable before the turn ends: a crash of build keeps the record of what was spent
            with lease.log.open("a", encoding="utf-8") as log:
                log.write(json.dumps(record.as_json()) + "\n")


def _error(status: int, kind: str, message: str) -> web.Response:
    """An error every SDK can read: Anthropic's and OpenAI's shapes overlap on error.message, Google's on error.status."""
    return web.json_response({"type": "error", "error": {"type": kind, "code": status, "status": kind.upper(),
                                                         "message": message}}, status=status)
