"""The gateway's door for cluster nodes and a node's relay (build_loop/gateway/door.py, node_relay.py), over real
sockets, against the SCRIPTED MODEL SERVER (a labelled stand-in for a provider); and the run's budgets and a provider's
rate limit holding across every turn in flight (gateway/meter.py). The same parts on a real cluster, with real CLIs on
nodes in network namespaces of their own: tests/build_loop/test_cluster_gateway.py."""
from __future__ import annotations

import contextlib
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from build_loop.gateway.door import Door
from build_loop.gateway.lease import Lease
from build_loop.gateway.node_relay import NodeRelay, NodeRelayError
from build_loop.gateway.server import Allowance, Gateway
from shared.bodies import BodyStore
from shared.config import GatewayConfig, PriceConfig, ProviderConfig
from tests.helpers.model_server import ModelServer, Nothing, RateLimit, Script

CANARY = "sk-CANARY-door-provider-key-2718"
MODEL = "scripted-model"
BODY = {"model": MODEL, "messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(Script.of(Nothing("SCRIPTED MODEL SERVER: fine."), api_key=CANARY)) as running:
        yield running


def gateway(server: ModelServer, tmp_path: Path, **options: Any) -> Gateway:
    config = GatewayConfig(providers={"openai": ProviderConfig(wire="openai", base_url=server.url + "/v1")},  # type: ignore[arg-type]
                           prices={MODEL: PriceConfig(input=3.0, output=15.0)}, **options)
    return Gateway(config, {"openai": CANARY}, BodyStore(tmp_path / "bodies")).start()


@contextlib.contextmanager
def door_with_a_turn(server: ModelServer, tmp_path: Path) -> Iterator[tuple[Gateway, Door, Lease]]:
    """Build's gateway, its door open to nodes, and one turn's lease admitted at it."""
    with gateway(server, tmp_path) as gw:
        door = Door(gw, "127.0.0.1")
        door.open()
        lease = gw.open_turn("openai")
        door.admit(lease)
        try:
            yield gw, door, lease
        finally:
            door.stop()


def post(url: str, token: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url + "/chat/completions", json.dumps(BODY).encode(),
                                     {"content-type": "application/json", "authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def knock(door: Door, line: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", door.port), timeout=10) as sock:
        sock.sendall(line)
        return sock.recv(16)


def test_the_door_lets_in_only_a_turns_open_token(server: ModelServer, tmp_path: Path) -> None:
    with door_with_a_turn(server, tmp_path) as (gw, door, lease):
        assert knock(door, b"CALL not-a-token\n") == b"NO\n"
        assert knock(door, f"CALL {CANARY}\n".encode()) == b"NO\n"  # the provider's key is no token
        assert knock(door, b"GET / HTTP/1.1\r\n\r\n") == b"NO\n"  # no HTTP is parsed before the token
        assert knock(door, f"CALL {lease.token}\n".encode()) == b"OK\n"
        gw.close(lease)
        assert knock(door, f"CALL {lease.token}\n".encode()) == b"NO\n"  # closed: revoked at the door too
    assert server.requests == () and door.refused == 4


def test_a_nodes_relay_carries_the_turn_to_the_gateway_and_brings_back_its_record(server: ModelServer,
                                                                                tmp_path: Path) -> None:
    with gateway(server, tmp_path) as gw:
        door = Door(gw, "127.0.0.1")
        door.open()
        head_lease = gw.open_turn("openai", log=tmp_path / "head-calls.jsonl")
        placed: list[str] = []
        door.admit(head_lease, placed.append)
        relay = NodeRelay(("127.0.0.1", door.port), head_lease.token, provider="openai", upstream_model="",
                          allowance=Allowance(), node="node-a")
        try:
            lease = relay.open_turn("openai", log=tmp_path / "node-calls.jsonl")
            status, answer = post(lease.url + "/v1", lease.token)  # as the CLI, on the node's 127.0.0.1
            assert status == 200 and b"SCRIPTED MODEL SERVER" in answer
            relay.close(lease)
        finally:
            relay.stop()
        door.stop()
    assert placed == ["node-a"] and head_lease.closed
    [seen] = server.model_requests
    assert seen.api_key == CANARY
    assert [c.as_json() for c in lease.calls] == [c.as_json() for c in head_lease.calls]  # the head's own record
    assert lease.calls[0].input_tokens > 0 and (tmp_path / "head-calls.jsonl").read_text().count("\n") == 1


def test_a_relay_whose_token_was_revoked_reaches_nothing(server: ModelServer, tmp_path: Path) -> None:
    with door_with_a_turn(server, tmp_path) as (gw, door, lease):
        relay = NodeRelay(("127.0.0.1", door.port), lease.token, provider="openai", upstream_model="",
                          allowance=Allowance(), node="node-b")
        try:
            node_lease = relay.open_turn("openai")
            gw.close(lease)  # the head gave the node up for lost
            assert node_lease.halt.wait(10) and node_lease.stop_reason == "lost"
            status, answer = post(node_lease.url + "/v1", node_lease.token)
        finally:
            relay.stop()
        with pytest.raises(NodeRelayError, match="refused this turn's token"):  # asked while the door is open
            NodeRelay(("127.0.0.1", door.port), lease.token, provider="openai", upstream_model="",
                      allowance=Allowance(), node="node-b")
    assert status == 502 and b"refused this turn's token" in answer
    assert server.requests == ()


def test_the_runs_token_budget_holds_across_turns_in_flight(server: ModelServer, tmp_path: Path) -> None:
    """Each turn alone is within its allowance; together they reach the run's budget, and every turn stops there."""
    with gateway(server, tmp_path, max_run_tokens=60) as gw:
        turns = gw.open_turn("openai"), gw.open_turn("openai")
        answers: list[tuple[int, bytes]] = []
        while not answers or answers[-1][0] == 200:
            answers.append(post(gw.url + "/v1", turns[len(answers) % 2].token))
            assert len(answers) < 40
    refused, answer = answers[-1]
    assert refused == 403 and b"run token budget is spent" in answer, answer
    assert len(answers) >= 3 and all(turn.calls and turn.tokens < 60 for turn in turns)  # each alone was within it
    assert all(turn.stop_reason == "budget" for turn in turns) and gw.meter.tokens >= 60
    assert len(server.model_requests) == len(answers) - 1


def test_a_providers_rate_limit_seen_by_one_turn_holds_for_every_turn(tmp_path: Path) -> None:
    with ModelServer(Script.of(RateLimit(retry_after=20), api_key=CANARY)) as limited, gateway(limited, tmp_path) as gw:
        first, second = gw.open_turn("openai"), gw.open_turn("openai")
        before = time.time()
        assert post(gw.url + "/v1", first.token)[0] == 429
        assert second.halt.is_set() and second.stop_reason == "rate_limited"  # stopped at once, never having asked
        third = gw.open_turn("openai")  # a turn that starts before the reset is refused without asking the provider
        status, answer = post(gw.url + "/v1", third.token)
        asked = len(limited.model_requests)
    assert status == 429 and b"rate limited until" in answer and asked == 1
    assert third.stop_reason == "rate_limited" and third.resets_at == first.resets_at
    assert first.resets_at is not None and before + 19 <= first.resets_at <= time.time() + 21


@pytest.mark.parametrize("message", [b"not json\n", b"[1, 2]\n", b"x" * 4096], ids=["garbage", "not-an-object", "endless"])
def test_a_watch_that_says_nonsense_closes_nothing_and_the_door_stays_open(server: ModelServer, tmp_path: Path,
                                                                          message: bytes) -> None:
    with door_with_a_turn(server, tmp_path) as (_, door, lease):
        with socket.create_connection(("127.0.0.1", door.port), timeout=10) as sock:
            sock.sendall(f"WATCH {lease.token} node-c\n".encode())
            assert sock.recv(3) == b"OK\n"
            sock.sendall(message)
            assert sock.recv(64) == b""  # the door hangs up on it, sending no calls
        assert not lease.closed
        assert knock(door, f"CALL {lease.token}\n".encode()) == b"OK\n"
