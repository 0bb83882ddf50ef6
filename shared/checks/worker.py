"""`python -m shared.checks.worker --jobs N [--write DIR ...] [--hide DIR ...]`: plan's sandboxed check runner.

It narrows itself with Landlock first (before any thread starts), then runs the requests it reads as
JSON on stdin, up to N at a time, through the one subprocess runner, and prints the outcomes as JSON.
One interpreter start per plan pass instead of one per check. Kept free of heavy imports.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from shared.process import Limits, Outcome, Request, run


def encode_requests(requests: list[Request]) -> str:
    return json.dumps([{"argv": list(r.argv), "cwd": str(r.cwd), "env": dict(r.env), "timeout": r.timeout, "grace": r.grace,
                        "limits": dataclasses.asdict(r.limits) if r.limits is not None else None, "report": r.report}
                       for r in requests])


def _request(row: dict[str, Any]) -> Request:
    limits = row.get("limits")
    return Request(tuple(row["argv"]), Path(row["cwd"]), row["env"], "", row["timeout"], row["grace"],
                   Limits(**limits) if limits is not None else None, bool(row.get("report")))


def decode_outcomes(text: str, requests: list[Request]) -> list[Outcome]:
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"its output is not JSON: {exc.msg}") from None
    if not isinstance(rows, list) or len(rows) != len(requests):
        raise ValueError("it returned a different number of outcomes than it was given checks")
    return [Outcome(tuple(r["argv"]), r["returncode"], r["stdout"], r["stderr"], r["started"], r["duration"],
                    r["timed_out"], r["reaped"], r.get("cancelled", False), r.get("capped", ""), False, r.get("report"))
            for r in rows]


def _flag_values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == flag and i + 1 < len(argv)]


def main(argv: list[str]) -> int:
    from shared.isolation.sandbox import landlock_features, not_dumpable, restrict_writes

    not_dumpable()  # it holds every check's report channel: no check may open them through /proc/PID/fd

    jobs = int((_flag_values(argv, "--jobs") or ["1"])[0])
    writable = [Path(p) for p in _flag_values(argv, "--write")]
    if os.geteuid() != 0:  # its checks' --offline wrappers write /proc/self/uid_map (shared/isolation/policy.py)
        writable.append(Path("/proc"))
    hidden = [Path(p) for p in _flag_values(argv, "--hide")]
    scopes = bool(landlock_features()["scopes"])  # checks may not signal plan-loop or its peers
    restrict_writes(writable, hidden, scope_signals=scopes, scope_abstract_unix=scopes)
    # Under Landlock the runner cannot write cgroupfs, so its checks get no cgroup of their own: they share
    # the one plan runs this whole runner in, and run() falls back to process groups and tags inside it.
    requests = [_request(r) for r in json.loads(sys.stdin.read())]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        outcomes = list(pool.map(run, requests))
    json.dump([dataclasses.asdict(o) for o in outcomes], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
