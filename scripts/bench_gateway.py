"""The gateway's added latency per call and per streamed chunk, beside a direct connection to the same server.

    python scripts/bench_gateway.py [--repeat 250] [--streams 8] [--chunks 300] [--chunk-delay 3] [--quick] [--profile]

The upstream is the SCRIPTED MODEL SERVER (a stand-in for a provider: no model is called) in a child process. The
gateway runs in a thread of a second child process, as in build-loop, and records every call as build has it do:
bodies in a BodyStore (one fsync'ed file each), a line per call in the turn's calls.jsonl, usage and cost from a price
table, a turn budget (never reached) checked before and after. A turn is 100 calls; then its token is closed and a
new turn opened. The client is this process, one process per actor as in a real turn (CLI, build-loop, provider),
so that no two of them share an interpreter lock.

Per call: every repetition makes the same call directly and through the gateway, which one first alternating, so
drift hits both alike; "added" is the median of the paired differences. Each request body is new (a counter in the
text), as a conversation's are, so the gateway stores every request and every response. Keep-alive is one
persistent connection to each side, as the CLIs keep theirs; cold is a new connection per call.

Streaming: an Anthropic stream of --chunks text deltas (24 characters each), which the server paces --chunk-delay ms
apart; streams direct and through the gateway alternate. The server notes when it writes each event and the client
when it has read it (one monotonic clock for the machine), so an event's transit is measured without the server's
pacing jitter. A gateway that buffered would hold events back for later ones: "not buffered" is a median added transit
under one pacing interval and a p99 transit no more than one pacing interval above the direct p99.

--profile runs cProfile on the gateway's thread (wall-clock time, so fsync waits count; epoll's is the loop idling;
the figures are then slower than without) and prints the functions that take most. The CPU line counts the gateway's
and the server's processes, from /proc.
"""
from __future__ import annotations

import argparse
import datetime
import http.client
import io
import json
import os
import platform
import pstats
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp  # noqa: E402

from scripts._gateway_children import KEY, MODEL, Child  # noqa: E402

TURN_CALLS = 100  # calls per turn token, then a new turn
WARMUP = 5
LARGE_KB = 64  # a CLI's first request (system prompt and tool definitions) is tens of KiB
LUMP_MS = 0.5  # an event arriving sooner than this after the one before came in the same lump
Prepared = tuple[str, str, dict[str, str]]  # a request's path, body and headers


@dataclass(frozen=True)
class Wire:
    name: str
    provider: str  # the gateway's provider for it
    path: str  # what the client posts to the gateway
    base: str  # the provider's base path at the server, which a direct client adds itself
    auth: str  # the header the SDKs carry their key in
    body: Callable[[str], dict[str, Any]]


WIRES = (
    Wire("anthropic /v1/messages", "anthropic", "/v1/messages", "", "x-api-key",
         lambda text: {"model": MODEL, "max_tokens": 100, "messages": [{"role": "user", "content": text}]}),
    Wire("openai /chat/completions", "openai", "/chat/completions", "/v1", "authorization",
         lambda text: {"model": MODEL, "messages": [{"role": "user", "content": text}]}),
    Wire("openai /responses", "openai", "/responses", "/v1", "authorization", lambda text: {"model": MODEL, "input": text}),
    Wire("gemini generateContent", "gemini", f"/v1beta/models/{MODEL}:generateContent", "", "x-goog-api-key",
         lambda text: {"contents": [{"role": "user", "parts": [{"text": text}]}]}),
)
# a request offering a tool is the turn's main call, which the script answers with its long text (others get a line)
NOOP_TOOL = {"name": "noop", "description": "does nothing", "input_schema": {"type": "object", "properties": {}}}
STREAM = Wire("anthropic /v1/messages, streamed", "anthropic-stream", "/v1/messages", "", "x-api-key",
              lambda text: {**WIRES[0].body(text), "tools": [NOOP_TOOL], "stream": True})


@dataclass(frozen=True)
class Case:
    wire: Wire
    keep_alive: bool
    body_kb: int = 0

    @property
    def label(self) -> str:
        size = f", {self.body_kb} KiB request" if self.body_kb else ""
        return f"| {self.wire.name}{size} | {'keep-alive' if self.keep_alive else 'cold'} |"


# the two sides ------------------------------------------------------------------------------------------------------
class Side:
    """One way to the server: direct (the provider's base path, its key) or through the gateway (a turn's token)."""

    def __init__(self, port: int, key: Callable[[Wire], str], direct: bool) -> None:
        self.port, self.key, self.direct = port, key, direct
        self._connection: http.client.HTTPConnection | None = None

    def _open(self, keep_alive: bool) -> http.client.HTTPConnection:
        if not keep_alive:
            return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        if self._connection is None:
            self._connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        return self._connection

    def _request(self, wire: Wire, text: str) -> Prepared:
        """Path, body and headers, made before the clock starts (a new turn's token is asked of the gateway's process)."""
        key = self.key(wire)
        headers = {"content-type": "application/json", "anthropic-version": "2023-06-01",
                   wire.auth: f"Bearer {key}" if wire.auth == "authorization" else key}
        return (wire.base if self.direct else "") + wire.path, json.dumps(wire.body(text)), headers

    def _answer(self, connection: http.client.HTTPConnection, request: Prepared) -> http.client.HTTPResponse:
        path, body, headers = request
        connection.request("POST", path, body, headers)
        response = connection.getresponse()
        if response.status != 200:
            raise RuntimeError(f"{'direct' if self.direct else 'gateway'} {path}: HTTP {response.status} "
                               f"{response.read()[:300]!r}")
        return response

    def call(self, wire: Wire, text: str, keep_alive: bool) -> float:
        """Seconds from sending the request (connecting, when cold) to the last byte of the answer."""
        connection, request = self._open(keep_alive), self._request(wire, text)
        started = time.perf_counter()
        answer = self._answer(connection, request).read()
        elapsed = time.perf_counter() - started
        if not keep_alive:
            connection.close()
        if b"SCRIPTED MODEL SERVER" not in answer:
            raise RuntimeError(f"not the scripted model server's answer: {answer[:300]!r}")
        return elapsed

    def stream(self, wire: Wire, text: str) -> tuple[float, list[float]]:
        """When the request was sent and when each server-sent event arrived (its closing blank line), on the
        monotonic clock that every process of the machine shares."""
        connection, request = self._open(keep_alive=True), self._request(wire, text)
        started = time.monotonic()
        response = self._answer(connection, request)
        arrivals = []
        while line := response.readline():
            if line in (b"\n", b"\r\n"):
                arrivals.append(time.monotonic())
        return started, arrivals

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


class Turns:
    """The gateway's turn tokens, one per provider, each used for TURN_CALLS calls and then closed."""

    def __init__(self, gateway: Child) -> None:
        self.gateway = gateway
        self._current: dict[str, tuple[str, int]] = {}
        self.calls = 0

    def token(self, wire: Wire) -> str:
        token, used = self._current.get(wire.provider, ("", TURN_CALLS))
        if used >= TURN_CALLS:
            if token:
                self.gateway.ask(f"close {token}")
            token, used = self.gateway.ask(f"open {wire.provider}"), 0
        self._current[wire.provider] = (token, used + 1)
        self.calls += 1
        return token


# measuring ----------------------------------------------------------------------------------------------------------
def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def measure_calls(cases: list[Case], direct: Side, gateway: Side, repeat: int) -> dict[Case, tuple[list[float], list[float]]]:
    times: dict[Case, tuple[list[float], list[float]]] = {case: ([], []) for case in cases}
    for rep in range(-WARMUP, repeat):
        for index, case in enumerate(cases):
            text = f"hello {rep} {index}" + " lorem ipsum" * (case.body_kb * 1024 // 12)
            first, second = (direct, gateway) if rep % 2 else (gateway, direct)
            took = {side: side.call(case.wire, text, case.keep_alive) for side in (first, second)}
            if rep >= 0:
                times[case][0].append(took[direct])
                times[case][1].append(took[gateway])
    return times


@dataclass(frozen=True)
class Stream:
    started: float  # when the client sent the request
    sent: list[float]  # when the server wrote each event
    arrived: list[float]  # when the client had read it

    @property
    def transit(self) -> list[float]:
        return [arrived - sent for sent, arrived in zip(self.sent, self.arrived, strict=True)]

    @property
    def first(self) -> float:
        return self.arrived[0] - self.started

    @property
    def whole(self) -> float:
        return self.arrived[-1] - self.started

    @property
    def gaps(self) -> list[float]:
        return [later - earlier for earlier, later in zip(self.arrived, self.arrived[1:], strict=False)]


def measure_streams(direct: Side, gateway: Side, models: Child, streams: int) -> tuple[list[Stream], list[Stream]]:
    runs: tuple[list[Stream], list[Stream]] = ([], [])
    for rep in range(-1, streams):  # one pair to warm up
        first, second = (direct, gateway) if rep % 2 else (gateway, direct)
        seen = {}
        for side in (first, second):
            started, arrived = side.stream(STREAM, f"stream {rep}")
            sent = json.loads(models.ask("sent"))
            if len(sent) != len(arrived):
                raise RuntimeError(f"the server wrote {len(sent)} events, {len(arrived)} arrived "
                                   f"({'direct' if side is direct else 'through the gateway'})")
            seen[side] = Stream(started, sent, arrived)
        if rep >= 0:
            runs[0].append(seen[direct])
            runs[1].append(seen[gateway])
    return runs


def print_calls(times: dict[Case, tuple[list[float], list[float]]]) -> tuple[float, str]:
    print("| call (not streamed) | connection | direct, median | direct, p90 | gateway, median | gateway, p90 "
          "| added (median of pairs) | gateway / direct |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    worst, worst_case = 0.0, ""
    for case, (direct, through) in times.items():
        added = statistics.median(g - d for d, g in zip(direct, through, strict=True))
        if added > worst:
            worst, worst_case = added, case.label.strip("| ").replace(" | ", ", ")
        d, g = statistics.median(direct), statistics.median(through)
        print(f"{case.label} {ms(d)} | {ms(quantile(direct, 0.9))} | {ms(g)} | {ms(quantile(through, 0.9))} "
              f"| {ms(added)} | {g / d:.2f}x |")
    return worst, worst_case


def print_streams(direct: list[Stream], through: list[Stream], chunk_delay: float) -> tuple[bool, str]:
    events = len(direct[0].arrived)
    rows: list[tuple[str, Callable[[list[Stream]], float]]] = [
        ("time to first event (from the request), median", lambda runs: statistics.median(r.first for r in runs)),
        ("whole stream, median", lambda runs: statistics.median(r.whole for r in runs)),
        ("event transit (server's write to client's read), median",
         lambda runs: statistics.median(t for r in runs for t in r.transit)),
        ("event transit, p99", lambda runs: quantile([t for r in runs for t in r.transit], 0.99)),
        ("event transit, max", lambda runs: max(t for r in runs for t in r.transit)),
        ("gap between events, median", lambda runs: statistics.median(g for r in runs for g in r.gaps)),
        ("largest gap between events", lambda runs: max(g for r in runs for g in r.gaps)),
    ]
    print(f"| streamed answer: {events} events, paced {chunk_delay:g} ms apart, {len(direct)} streams each "
          "| direct | gateway | gateway - direct |")
    print("|---|---:|---:|---:|")
    for name, of in rows:
        d, g = of(direct), of(through)
        print(f"| {name} | {ms(d)} | {ms(g)} | {ms(g - d)} |")
    lumped = [sum(gap < LUMP_MS / 1000 for gap in r.gaps) / len(r.gaps) for r in (*direct, *through)]
    print(f"| events within {LUMP_MS} ms of the one before (a lump) | {statistics.mean(lumped[:len(direct)]):.1%} "
          f"| {statistics.mean(lumped[len(direct):]):.1%} | |")
    added = [g - d for run_d, run_g in zip(direct, through, strict=True)
             for d, g in zip(run_d.transit, run_g.transit, strict=True)]
    per_event = [(run_g.whole - run_d.whole) / events for run_d, run_g in zip(direct, through, strict=True)]
    print(f"\nper-event added delay (transit through the gateway minus transit direct, same event of paired streams, "
          f"{len(added)} events): median {ms(statistics.median(added))}, p99 {ms(quantile(added, 0.99))}, "
          f"max {ms(max(added))}")
    print(f"per streamed event ((gateway stream - direct stream) / {events} events, median of pairs; includes the "
          f"server's pacing jitter): {statistics.median(per_event) * 1e6:.0f} us")
    # Buffered, events would wait for later ones: the typical one by a pacing interval or more, or the slowest ones by
    # that much more than the slowest direct ones (which wait on the scheduler alike).
    pacing = chunk_delay / 1000
    tail_d, tail_g = (quantile([t for r in runs for t in r.transit], 0.99) for runs in (direct, through))
    spread = statistics.median(added) < pacing and tail_g - tail_d < pacing
    why = (f"median added {ms(statistics.median(added))} and p99 transit {ms(tail_g)} against {ms(tail_d)} direct, "
           f"with events {chunk_delay:g} ms apart; first event at {ms(statistics.median(r.first for r in through))} "
           f"of a {ms(statistics.median(r.whole for r in through))} stream")
    return spread, why


def print_profile(path: Path) -> None:
    out = io.StringIO()
    stats = pstats.Stats(str(path), stream=out)
    stats.sort_stats("tottime").print_stats(25)
    print("\nprofile of the gateway's thread (cProfile, own time; the figures above were measured under it):")
    print("\n".join(line for line in out.getvalue().splitlines()[4:] if line.strip()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=250, help="calls per row, each direct and through the gateway")
    parser.add_argument("--streams", type=int, default=8, help="streamed answers, each direct and through the gateway")
    parser.add_argument("--chunks", type=int, default=300, help="text deltas in a streamed answer")
    parser.add_argument("--chunk-delay", type=float, default=3.0, metavar="MS", help="the server's pause between events")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 10 calls per row, 2 streams of 100 deltas")
    parser.add_argument("--profile", action="store_true", help="cProfile the gateway's thread and print where time goes")
    args = parser.parse_args()
    if args.quick:
        args.repeat, args.streams, args.chunks = 10, 2, 100
    print(f"machine: {os.cpu_count()} cores, Linux {platform.release()}, Python {platform.python_version()}, aiohttp "
          f"{aiohttp.__version__}; load average {os.getloadavg()[0]:.2f}; {datetime.date.today().isoformat()}")
    print(f"command: python scripts/bench_gateway.py {shlex.join(sys.argv[1:])}".rstrip())
    print("upstream: the SCRIPTED MODEL SERVER (a stand-in for a provider; no model is called)\n")
    cases = [Case(wire, True) for wire in WIRES] + [Case(WIRES[0], True, LARGE_KB)] + [Case(wire, False) for wire in WIRES]
    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as tmp:
        models = Child("models", str(args.chunks), str(args.chunk_delay))
        children = [models]
        try:
            upstreams = json.loads(models.ready)
            profile = Path(tmp) / "gateway.prof"
            gateway = Child("gateway", json.dumps(upstreams), tmp, *([str(profile)] if args.profile else []))
            children.append(gateway)
            turns = Turns(gateway)
            direct_port = int(upstreams["short"].rsplit(":", 1)[1])
            through_port = int(gateway.ready)
            direct, through = Side(direct_port, lambda wire: KEY, True), Side(through_port, turns.token, False)
            before = {child: child.cpu_seconds() for child in children}
            times = measure_calls(cases, direct, through, args.repeat)
            cpu = {child: (child.cpu_seconds()[0] - user, child.cpu_seconds()[1] - system)
                   for child, (user, system) in before.items()}
            direct.close()
            through.close()
            direct = Side(int(upstreams["long"].rsplit(":", 1)[1]), lambda wire: KEY, True)
            through = Side(through_port, turns.token, False)
            streamed = measure_streams(direct, through, models, args.streams)
            direct.close()
            through.close()
            record = json.loads(gateway.ask("record"))
        finally:
            for child in reversed(children):
                child.stop()
        worst, worst_case = print_calls(times)
        print()
        spread, why = print_streams(*streamed, args.chunk_delay)
        print(f"\nrecord: {record['calls']} calls of {turns.calls} sent through the gateway, {record['logged']} lines in "
              f"the turns' calls.jsonl, {record['bodies']} bodies stored")
        calls = len(cases) * (args.repeat + WARMUP)
        print(f"CPU per call (not streamed), user + system: the gateway's process {ms(cpu[gateway][0] / calls)} + "
              f"{ms(cpu[gateway][1] / calls)}; the model server's {ms(cpu[models][0] / calls / 2)} + "
              f"{ms(cpu[models][1] / calls / 2)} (it answers each call twice: direct and forwarded)")
        met = worst < 0.002
        verdict = f"met (worst row {ms(worst)}: {worst_case})" if met else \
            f"MISSED by {ms(worst - 0.002)} (worst row {ms(worst)}: {worst_case})"
        caveat = "under cProfile, so slower than without: " if args.profile else ""
        print(f"verdict: {caveat}per call, added latency under 2 ms: {verdict}; streamed events "
              f"{'not buffered' if spread else 'HELD BACK'} ({why})")
        if args.profile:
            print_profile(profile)


if __name__ == "__main__":
    main()
