"""The two child processes of scripts/bench_gateway.py: the SCRIPTED MODEL SERVER (a stand-in for a provider; no model
is called) and the gateway in a thread, as build-loop runs it. Each takes one line asked on stdin and answers one line
on stdout, so that the benchmark, the server and the gateway never share an interpreter lock.

    python scripts/_gateway_children.py models CHUNKS CHUNK_DELAY_MS
    python scripts/_gateway_children.py gateway UPSTREAMS_JSON STATE [PROFILE]
"""
from __future__ import annotations

import cProfile
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiohttp import web  # noqa: E402

from build_loop.gateway.server import Allowance, Gateway, Lease  # noqa: E402
from shared.bodies import BodyStore  # noqa: E402
from shared.config import GatewayConfig, PriceConfig, ProviderConfig  # noqa: E402
from tests.helpers.model_server.conversation import LABEL  # noqa: E402

MODEL = "scripted-model"
KEY = "sk-bench-provider-key"


# the benchmark's side ------------------------------------------------------------------------------------------------
class Child:
    """scripts/_gateway_children.py in a child process, in another role; one line asked on stdin, one line answered on stdout."""

    def __init__(self, role: str, *args: str) -> None:
        self.role = role
        self.process = subprocess.Popen([sys.executable, __file__, role, *args], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, start_new_session=True)
        self.ready = self._line()

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the benchmark's {self.role} child ended: see its stderr above")
        return line.strip()

    def ask(self, line: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self._line()

    def cpu_seconds(self) -> tuple[float, float]:
        """User and system time the child has used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) / os.sysconf("SC_CLK_TCK"), int(fields[12]) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()



def serve_models(chunks: int, chunk_delay: float) -> None:
    """Two scripted model servers: one answering a line, one a long text in paced events. Each event the server
    writes is noted with the time (instrumentation only: the server's answers are unchanged)."""
    from tests.helpers.model_server import ModelServer, Nothing, Script

    sent: list[float] = []
    write = web.StreamResponse.write

    async def write_noting_time(response: web.StreamResponse, data: bytes | bytearray | memoryview) -> None:
        if response.content_type == "text/event-stream":  # noted before the write, so before the client can have it
            sent.append(time.monotonic())
        await write(response, data)

    web.StreamResponse.write = write_noting_time  # type: ignore[method-assign, assignment]
    words = " ".join(f"word{i}" for i in range(chunks * 24 // 7))  # cut into 24-character deltas by the server
    short = Script.of(Nothing("SCRIPTED MODEL SERVER: fine."), api_key=KEY)
    long = Script.of(Nothing(words[:chunks * 24 - len(LABEL) - 1]), api_key=KEY)
    with ModelServer(short) as whole, ModelServer(long, chunk_delay=chunk_delay) as paced:
        print(json.dumps({"short": whole.url, "long": paced.url}), flush=True)
        for _ in sys.stdin:  # "sent": the times of the events written since the last ask
            taken = sent[:]
            del sent[:len(taken)]  # taken before the answer goes out: the next stream may start at once
            print(json.dumps(taken), flush=True)


def serve_gateway(upstreams: dict[str, str], state: Path, profile: Path | None) -> None:
    profiler = cProfile.Profile()
    if profile is not None:  # the gateway's own thread only, from its first instruction
        def first_event(*_: object) -> None:
            sys.setprofile(None)
            if threading.current_thread().name == "banach-gateway":
                profiler.enable()
        threading.setprofile(first_event)
    providers = {name: ProviderConfig(wire=name, base_url=upstreams["short"] + base)  # type: ignore[arg-type]
                 for name, base in (("anthropic", ""), ("openai", "/v1"), ("gemini", ""))}
    providers["anthropic-stream"] = ProviderConfig(wire="anthropic", base_url=upstreams["long"])
    config = GatewayConfig(providers=providers, prices={MODEL: PriceConfig(input=3.0, output=15.0)})
    gateway = Gateway(config, {name: KEY for name in providers}, BodyStore(state / "bodies")).start()
    threading.setprofile(None)  # type: ignore[arg-type]
    leases: dict[str, Lease] = {}
    print(gateway.port, flush=True)
    for line in sys.stdin:
        command, argument = (line.split() + [""])[:2]
        if command == "open":
            folder = state / f"turn-{len(leases) + 1:04d}"
            folder.mkdir()
            budget = Allowance(tokens=10**12, cost_usd=10.0**6, tokens_from="turn", cost_from="turn")
            lease = gateway.open_turn(argument, allowance=budget, log=folder / "calls.jsonl")
            leases[lease.token] = lease
            print(lease.token, flush=True)
        elif command == "close":
            gateway.close(leases[argument])
            print("closed", flush=True)
        elif command == "record":  # what the record holds: calls in the leases, lines in the logs, bodies stored
            logged = sum(len(lease.log.read_text().splitlines()) for lease in leases.values() if lease.log and lease.log.exists())
            bodies = sum(1 for path in (state / "bodies").rglob("*") if path.is_file())
            print(json.dumps({"calls": sum(len(lease.calls) for lease in leases.values()), "logged": logged,
                              "bodies": bodies}), flush=True)
    gateway.stop()
    if profile is not None:
        profiler.dump_stats(profile)


def main(argv: list[str]) -> None:
    role, *rest = argv
    if role == "models":
        serve_models(int(rest[0]), float(rest[1]) / 1000)
    else:
        serve_gateway(json.loads(rest[0]), Path(rest[1]), Path(rest[2]) if len(rest) > 2 else None)


if __name__ == "__main__":
    main(sys.argv[1:])
