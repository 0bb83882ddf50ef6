"""The model gateway against the SCRIPTED MODEL SERVER (a labelled stand-in for a provider), over real HTTP: what
reaches the provider, what is recorded, when a turn is stopped. The agents' side (real CLIs through the gateway in a
governed turn) is in tests/realcli and tests/redteam."""
from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from build_loop.gateway import wires
from build_loop.gateway.server import Allowance, Gateway
from shared.bodies import BodyStore
from shared.config import GatewayConfig, PriceConfig, ProviderConfig
from tests.helpers.model_server import ModelServer, Nothing, RateLimit, Script

CANARY = "sk-CANARY-provider-key-0123456789"
MODEL = "scripted-model"

# (wire, path the client posts to, body) for one call of each format, as the SDKs send them
CALLS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "anthropic": ("anthropic", "/v1/messages", {"model": MODEL, "max_tokens": 100,
                                                "messages": [{"role": "user", "content": "hello"}]}),
    "openai-chat": ("openai", "/chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": "hello"}]}),
    "openai-responses": ("openai", "/responses", {"model": MODEL, "input": "hello"}),
    "gemini": ("gemini", f"/v1beta/models/{MODEL}:generateContent",
               {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}),
}
STREAM_PATH = {"gemini": f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"}


def _base(server: ModelServer, wire: str) -> str:
    return server.url + ("/v1" if wire == "openai" else "")  # OpenAI's base includes /v1; the clients append the rest


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(Script.of(Nothing("SCRIPTED MODEL SERVER: fine."), api_key=CANARY)) as running:
        yield running


def _gateway(server: ModelServer, tmp_path: Path, **options: Any) -> Gateway:
    providers = {wire: ProviderConfig(wire=wire, base_url=_base(server, wire)) for wire in ("anthropic", "openai", "gemini")}  # type: ignore[arg-type]
    config = GatewayConfig(providers=providers, prices={MODEL: PriceConfig(input=3.0, output=15.0)}, **options)
    return Gateway(config, {wire: CANARY for wire in providers}, BodyStore(tmp_path / "bodies")).start()


def _post(url: str, token: str, body: dict[str, Any], header: str = "authorization") -> tuple[int, bytes, dict[str, str]]:
    value = f"Bearer {token}" if header == "authorization" else token
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json", header: value})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("name", list(CALLS))
def test_each_wire_reaches_the_provider_with_its_key_and_is_recorded(server: ModelServer, tmp_path: Path, name: str,
                                                                      stream: bool) -> None:
    wire, path, body = CALLS[name]
    if stream:
        path = STREAM_PATH.get(name, path)
        body = body if name == "gemini" else {**body, "stream": True}
    with _gateway(server, tmp_path) as gateway:
        lease = gateway.open_turn(wire, log=tmp_path / "calls.jsonl")
        status, answer, _ = _post(gateway.url + path, lease.token, body)
        gateway.close(lease)
    assert status == 200, answer
    assert b"SCRIPTED MODEL SERVER" in answer
    [seen] = server.model_requests
    assert seen.api_key == CANARY  # the provider got the real key ...
    assert lease.token not in json.dumps(seen.as_json())  # ... and never the turn's token
    [call] = lease.calls
    assert call.status == 200 and call.model_call and call.model == MODEL and call.stream == stream
    assert call.input_tokens > 0 and call.output_tokens > 0, call
    assert call.cost_usd == pytest.approx((call.input_tokens * 3.0 + call.output_tokens * 15.0) / 1e6)
    assert gateway.store.get(call.response_digest) == answer
    assert json.loads(gateway.store.get(call.request_digest) or b"")["model"] if wire != "gemini" else True
    assert [json.loads(line)["seq"] for line in (tmp_path / "calls.jsonl").read_text().splitlines()] == [1]


def test_a_streamed_answer_is_passed_on_as_it_arrives(tmp_path: Path) -> None:
    script = Script.of(Nothing("SCRIPTED MODEL SERVER: " + " ".join(f"word{i}" for i in range(40))), api_key=CANARY)
    with ModelServer(script, chunk_delay=0.05) as slow, _gateway(slow, tmp_path) as gateway:
        lease = gateway.open_turn("anthropic")
        connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
        body = {**CALLS["anthropic"][2], "stream": True}
        connection.request("POST", "/v1/messages", json.dumps(body), {"x-api-key": lease.token,
                                                                       "content-type": "application/json"})
        response = connection.getresponse()
        started, arrivals = time.monotonic(), []
        while response.read1(65536):
            arrivals.append(time.monotonic() - started)
        connection.close()
    assert len(arrivals) >= 4, arrivals
    # buffered, everything would arrive at the end at once; passed on, the first bytes come long before the last
    assert arrivals[0] < arrivals[-1] - 0.1, arrivals
    assert lease.calls[0].first_byte_ms is not None and lease.calls[0].first_byte_ms < lease.calls[0].latency_ms - 100


def test_no_token_a_wrong_token_or_a_closed_turn_reaches_nothing(server: ModelServer, tmp_path: Path) -> None:
    wire, path, body = CALLS["anthropic"]
    with _gateway(server, tmp_path) as gateway:
        lease = gateway.open_turn(wire)
        assert _post(gateway.url + path, "", body)[0] == 401
        assert _post(gateway.url + path, CANARY, body, "x-api-key")[0] == 401  # the provider's own key is no token
        gateway.close(lease)
        status, answer, _ = _post(gateway.url + path, lease.token, body, "x-api-key")
    assert status == 401 and b"one agent turn" in answer
    assert server.requests == () and gateway.refused == 3


@pytest.mark.parametrize("name", ["anthropic", "openai-chat", "gemini"])
def test_a_429_stops_the_turn_with_the_reset_the_provider_gave(tmp_path: Path, name: str) -> None:
    wire, path, body = CALLS[name]
    with ModelServer(Script.of(RateLimit(retry_after=20), api_key=CANARY)) as limited, _gateway(limited, tmp_path) as gateway:
        lease = gateway.open_turn(wire)
        before = time.time()
        status, _, _ = _post(gateway.url + path, lease.token, body)
    assert status == 429
    assert lease.halt.is_set() and lease.stop_reason == "rate_limited"
    assert lease.resets_at is not None and before + 19 <= lease.resets_at <= time.time() + 21


def test_a_token_budget_stops_the_turn_after_the_call_that_spent_it(server: ModelServer, tmp_path: Path) -> None:
    wire, path, body = CALLS["openai-chat"]
    with _gateway(server, tmp_path) as gateway:
        lease = gateway.open_turn(wire, allowance=Allowance(tokens=5, tokens_from="turn"))
        first = _post(gateway.url + path, lease.token, body)
        assert lease.halt.is_set() and lease.stop_reason == "budget"
        second = _post(gateway.url + path, lease.token, body)
    assert first[0] == 200 and second[0] == 403 and b"turn token budget is spent" in second[1]
    assert len(server.model_requests) == 1
    assert [c.status for c in lease.calls] == [200, 403] and lease.calls[1].error.startswith("refused")


def test_a_rung_names_the_model_the_provider_is_asked_for(server: ModelServer, tmp_path: Path) -> None:
    with _gateway(server, tmp_path) as gateway:
        for name in ("anthropic", "gemini"):
            wire, path, body = CALLS[name]
            lease = gateway.open_turn(wire, upstream_model="strong-model")
            assert _post(gateway.url + path, lease.token, body)[0] == 200
            assert lease.calls[-1].requested_model == MODEL and lease.calls[-1].model == "strong-model"
    assert [r.model for r in server.model_requests] == ["strong-model", "strong-model"]


def test_an_unreachable_provider_is_a_502_on_the_record(tmp_path: Path) -> None:
    config = GatewayConfig(providers={"gone": ProviderConfig(wire="openai", base_url="http://127.0.0.1:9/v1")})
    with Gateway(config, {"gone": CANARY}, BodyStore(tmp_path / "bodies")) as gateway:
        lease = gateway.open_turn("gone")
        status, answer, _ = _post(gateway.url + "/chat/completions", lease.token, CALLS["openai-chat"][2])
    assert status == 502 and b"cannot reach" in answer
    assert lease.calls[0].status == 502 and "cannot reach" in lease.calls[0].error


@pytest.mark.parametrize(("headers", "body", "expected"), [
    ({"retry-after": "20"}, b"", 20.0),
    ({"retry-after": "Thu, 03 Dec 2026 16:00:30 GMT"}, b"", None),  # a date: compared below
    ({"anthropic-ratelimit-requests-reset": "2026-12-03T16:00:45Z"}, b"", None),
    ({"x-ratelimit-reset-requests": "1m30s", "x-ratelimit-reset-tokens": "820ms"}, b"", 90.0),
    ({}, json.dumps({"error": {"details": [{"@type": "RetryInfo", "retryDelay": "17s"}]}}).encode(), 17.0),
])
def test_reset_times_are_read_from_what_each_provider_sends(headers: dict[str, str], body: bytes,
                                                             expected: float | None) -> None:
    now = 1796313600.0  # 2026-12-03T16:00:00Z
    at = wires.resets_at(headers, body, now)
    assert at is not None
    if expected is not None:
        assert at == pytest.approx(now + expected)
    else:
        assert 30 <= at - now <= 45


def test_usage_is_split_the_same_way_for_every_wire() -> None:
    chat = json.dumps({"usage": {"prompt_tokens": 100, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 40}}})
    anthropic = (b'data: {"type":"message_start","message":{"usage":{"input_tokens":60,"cache_read_input_tokens":40,'
                 b'"cache_creation_input_tokens":5,"output_tokens":1}}}\n\n'
                 b'data: {"type":"message_delta","usage":{"output_tokens":7}}\n\n')
    assert wires.usage_of(chat.encode(), "application/json") == wires.Usage(60, 7, 40, 0)
    assert wires.usage_of(anthropic, "text/event-stream") == wires.Usage(60, 7, 40, 5)
