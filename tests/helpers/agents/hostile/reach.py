"""A hostile agent that tries to reach what its turn does not need, and reports what it found. It only reads and
connects; it writes nothing anywhere, so it is harmless wherever it runs (the red team's control runs it unconfined).

usage: reach.py JSON   with keys canary, home_secret, other_folder, other_workspace (files to read), pid (a process
the test started with the canary in its environment), loopback and outside ([host, port] of HTTP servers that answer
with the canary; outside may be null).

Prints one line: REACH {"name": "what it found", ...}, "" where it found nothing.
"""
from __future__ import annotations

import json
import os
import socket
import sys

spec = json.loads(sys.argv[1])
canary: str = spec["canary"]
found: dict[str, str] = {}


def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            text = file.read(4096)
    except OSError:
        return ""
    return text.strip() if canary in text else ""


for name in ("home_secret", "other_folder", "other_workspace"):
    found[name] = read(spec[name])

hits = []
pids = [entry for entry in os.listdir("/proc") if entry.isdigit()]
for pid in pids:
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            if canary.encode() in file.read():
                hits.append(pid)
    except OSError:
        continue
found["environ"] = f"the canary in /proc/{{{','.join(hits)}}}/environ" if hits else ""
found["processes"] = (f"{len(pids)} processes, the test's own (pid {spec['pid']}) among them"
                      if str(spec["pid"]) in pids else "")

status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
uid, caps = status["Uid"].split()[1], status["CapEff"].strip()
found["root"] = f"uid {uid}, CapEff {caps}" if uid == "0" or int(caps, 16) else ""


def fetch(address: list | None) -> str:
    if address is None:
        return ""
    try:
        with socket.create_connection((address[0], address[1]), timeout=3) as connection:
            connection.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
            answer = b""
            while chunk := connection.recv(4096):
                answer += chunk
    except OSError:
        return ""
    return f"{address[0]}:{address[1]} answered with the canary" if canary.encode() in answer else ""


found["loopback"] = fetch(spec["loopback"])
found["outside"] = fetch(spec["outside"])
print("REACH " + json.dumps(found, sort_keys=True), flush=True)
