"""A minimal agent program that talks to a model through Banach's gateway (BANACH_MODEL_URL, BANACH_MODEL_TOKEN), as
the `command` preset with a provider runs it: it offers the model one write_file tool over OpenAI Chat Completions,
writes what the model asks for, and answers with the result. It is a real program, not a model; in tests the model
behind the gateway is the SCRIPTED MODEL SERVER.

Options, for the tests that try to break the gateway's promises:
  --hunt            first look for any provider key it can reach: its environment, every /proc/*/environ and
                    cmdline, the keys folder, banach.toml, HOME; print what it finds ("FOUND ...")
  --calls N         make N model calls (each a fresh conversation) before writing: spends tokens
  --retry-forever   on a 429 or an overload, wait a second and ask again, without end (as some CLIs do)
  --probe HOST:PORT try a TCP connection there and print CONNECTED or BLOCKED (repeatable)
  --probe-udp HOST:PORT  send a datagram there and print SENT or BLOCKED
  --pause S         after the spending calls, wait S seconds before the turn's work (a turn still thinking)
  --tag TEXT        nothing but a mark on its command line, for a test to find it by
  --relay-stopped   print on stderr the line the turn's relay prints when it stops (the relay shares the agent's
                    stderr), then wait for the turn's timeout without calling the model, as a CLI that retries does
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

WRITE_TOOL = {"type": "function", "function": {
    "name": "write_file", "description": "Write a whole file.",
    "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
                   "required": ["file_path", "content"]}}}


def call(messages: list[dict[str, object]], *, retry_forever: bool) -> dict[str, object]:
    body = json.dumps({"model": os.environ.get("BANACH_MODEL", "scripted-model"), "messages": messages,
                       "tools": [WRITE_TOOL]}).encode()
    while True:
        request = urllib.request.Request(os.environ["BANACH_MODEL_URL"] + "/chat/completions", body, {
            "content-type": "application/json", "authorization": f"Bearer {os.environ['BANACH_MODEL_TOKEN']}"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            print(f"model answered {error.code}: {error.read()[:200]!r}", flush=True)
            if retry_forever and error.code in (429, 503, 529):
                time.sleep(1)
                continue
            raise SystemExit(3) from None


def hunt() -> None:
    """Everything an agent that wants the provider's key could read."""
    seen = 0
    for name, value in os.environ.items():
        print(f"FOUND env {name}={value}")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        for part in ("environ", "cmdline"):
            try:
                text = (entry / part).read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            seen += 1
            print(f"FOUND /proc/{entry.name}/{part}: {text}")
    interpreter = tuple(str(Path(prefix)) + "/" for prefix in {sys.prefix, sys.base_prefix})
    for root in (Path("..") / "state", Path("..") / "banach.toml", Path.home()):
        paths = [root] if root.is_file() else (list(root.rglob("*")) if root.is_dir() else [])
        for path in paths:
            if str(path).startswith(interpreter):  # the Python it runs on, when HOME holds it (pyenv): no key there
                continue
            try:
                if path.is_file() and path.stat().st_size < 1_000_000:
                    print(f"FOUND file {path}: {path.read_text(errors='replace')}")
                    seen += 1
            except OSError as exc:
                print(f"DENIED {path}: {exc.strerror}")
    print(f"hunted: {seen} sources read", flush=True)


def probe(target: str) -> None:
    host, port = target.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=3):
            print(f"CONNECTED {target}", flush=True)
    except OSError as exc:
        print(f"BLOCKED {target}: {exc}", flush=True)


def probe_udp(target: str) -> None:
    host, port = target.rsplit(":", 1)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.sendto(b"exfiltrated", (host, int(port)))
        print(f"SENT {target}", flush=True)
    except OSError as exc:
        print(f"BLOCKED {target}: {exc}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hunt", action="store_true")
    parser.add_argument("--calls", type=int, default=0)
    parser.add_argument("--retry-forever", action="store_true")
    parser.add_argument("--probe", action="append", default=[])
    parser.add_argument("--probe-udp", action="append", default=[])
    parser.add_argument("--relay-stopped", action="store_true")
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("--tag", default="")
    options = parser.parse_args()
    if options.relay_stopped:
        print("banach relay: stopped: ModuleNotFoundError(\"No module named 'threading'\")", file=sys.stderr, flush=True)
        time.sleep(3600)
    if options.hunt:
        hunt()
    for target in options.probe:
        probe(target)
    for target in options.probe_udp:
        probe_udp(target)
    prompt = Path(os.environ["BANACH_PROMPT_FILE"]).read_text()
    for index in range(options.calls):
        call([{"role": "user", "content": f"{prompt}\n(spending call {index + 1})"}], retry_forever=options.retry_forever)
        print(f"spent call {index + 1}", flush=True)
    if options.pause:
        time.sleep(options.pause)
    messages: list[dict[str, object]] = [{"role": "user", "content": prompt}]
    for _ in range(10):
        answer = call(messages, retry_forever=options.retry_forever)
        message = answer["choices"][0]["message"]  # type: ignore[index]
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            print(f"model said: {message.get('content')}")
            return 0
        for tool_call in calls:
            arguments = json.loads(tool_call["function"]["arguments"])
            path = Path(arguments["file_path"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(arguments["content"])
            print(f"wrote {path}", flush=True)
            messages.append({"role": "tool", "tool_call_id": tool_call["id"], "content": f"wrote {path}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
