"""`python -m plan_loop.worker --jobs N [--write DIR ...] [--hide DIR ...]`: plan's sandboxed check runner.

It narrows itself with Landlock first (before any thread starts), then runs the requests it reads as
JSON on stdin, up to N at a time, through the one subprocess runner, and prints the outcomes as JSON.
One interpreter start per plan pass instead of one per check. Kept free of heavy imports.
"""
from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from shared.process import Outcome, Request, run


def encode_requests(requests: list[Request]) -> str:
    return json.dumps([{"argv": list(r.argv), "cwd": str(r.cwd), "env": dict(r.env), "timeout": r.timeout, "grace": r.grace}
                       for r in requests])


def decode_outcomes(text: str, requests: list[Request]) -> list[Outcome]:
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"its output is not JSON: {exc.msg}") from None
    if not isinstance(rows, list) or len(rows) != len(requests):
        raise ValueError("it returned a different number of outcomes than it was given checks")
    return [Outcome(tuple(r["argv"]), r["returncode"], r["stdout"], r["stderr"], r["started"], r["duration"],
                    r["timed_out"], r["reaped"]) for r in rows]


def _flag_values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == flag and i + 1 < len(argv)]


def main(argv: list[str]) -> int:
    from shared.sandbox import restrict_writes

    jobs = int((_flag_values(argv, "--jobs") or ["1"])[0])
    writable = [Path(p) for p in _flag_values(argv, "--write")]
    hidden = [Path(p) for p in _flag_values(argv, "--hide")]
    restrict_writes(writable, hidden)
    requests = [Request(tuple(r["argv"]), Path(r["cwd"]), r["env"], "", r["timeout"], r["grace"])
                for r in json.loads(sys.stdin.read())]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        outcomes = list(pool.map(run, requests))
    json.dump([{"argv": list(o.argv), "returncode": o.returncode, "stdout": o.stdout, "stderr": o.stderr,
                "started": o.started, "duration": o.duration, "timed_out": o.timed_out, "reaped": o.reaped}
               for o in outcomes], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
