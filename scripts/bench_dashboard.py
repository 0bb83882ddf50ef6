"""The dashboard's figures (issue 25), measured in one run with a real `banach serve`, real journals and Debian's
chromium driven by Playwright.

    python scripts/bench_dashboard.py [--turns 20] [--iterations 10000] [--minutes 5] [--memory-only]

1. Row to browser: build-loop turns (a scripted stand-in agent that changes nothing, so every turn is a stall and
   nothing converges away; its item is unblocked after each) while a browser holds /iterations open; for each turn, the
   time from its iteration.ended row (the row's own timestamp) to the moment the page shows it (a MutationObserver in
   the page), median and p95.
2. Page load: each page's server time with 10,000 iterations in the build journal against 100, side by side. The
   rows are written through Journal.for_role (real SQLite, the real hash chain and receipts) by this script: a
   synthetic history, labelled as such, because 10,000 real turns take hours.
3. Memory: the server's resident memory at start and after --minutes of turns with the overview open and live.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STALLING_AGENT = f"{sys.executable} {ROOT / 'tests' / 'helpers' / 'agents' / 'no_change.py'}"
sys.path.insert(0, str(ROOT))

from shared.journal import Journal  # noqa: E402
from shared.workspace import Workspace  # noqa: E402

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
OBSERVER = """() => { window.seen = {}; new MutationObserver(() => {
  document.querySelectorAll('tr[data-n]').forEach(r => {
    if (!(r.dataset.n in window.seen)) window.seen[r.dataset.n] = Date.now(); });
}).observe(document.getElementById('main'), {childList: true, subtree: true}); }"""


def banach(*args: str) -> subprocess.CompletedProcess[str]:
    modules = {"banach": "shared", "build-loop": "build_loop", "plan-loop": "plan_loop"}
    return subprocess.run([sys.executable, "-m", modules[args[0]], *args[1:]], capture_output=True, text=True)


def workspace(folder: Path) -> Workspace:
    made = banach("banach", "init", "--example", str(folder / "ws"))
    assert made.returncode == 0, made.stderr
    assert banach("plan-loop", "once", "-w", str(folder / "ws")).returncode in (0, 1)
    return Workspace.open(folder / "ws")


class Server:
    def __init__(self, ws: Workspace) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "shared", "serve", "-w", str(ws.root), "--port", "0"],
                                        stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        found = re.search(r"(http://[^/]+)/\?token=(\S+)", self.process.stderr.readline())
        assert found
        self.base, self.token = found.group(1), found.group(2)
        time.sleep(1.0)

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def seconds(self, path: str) -> float:
        request = urllib.request.Request(self.base + path, headers={"Authorization": f"Bearer {self.token}"})
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
        return time.perf_counter() - started

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=15)


def row_to_browser(ws: Workspace, browser: object, turns: int) -> list[float]:
    server = Server(ws)
    try:
        page = browser.new_page()  # type: ignore[attr-defined]
        page.goto(f"{server.base}/iterations?token={server.token}")
        page.evaluate(OBSERVER)
        for _ in range(turns):
            banach("build-loop", "once", "-w", str(ws.root), "--agent-command", STALLING_AGENT)
            banach("build-loop", "unblock", "-w", str(ws.root))
        time.sleep(2.0)
        seen = page.evaluate("window.seen")
    finally:
        server.stop()
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        ended = {str(row.data["n"]): row.ts for row in journal.rows("iteration.ended")}
    return [seen[n] / 1000 - ts for n, ts in ended.items() if n in seen]


def synthetic_history(ws: Workspace, iterations: int) -> None:
    """SYNTHETIC: real journal rows (hash chain, receipts) for turns that never ran, to load the pages with."""
    with Journal.for_role(ws, "build") as journal:
        for n in range(1000, 1000 + iterations):
            base = {"n": n, "item": f"TK-{n % 5 + 1}.synthetic", "plan_pass": 1, "canon_version": 1}
            journal.append("iteration.started", {**base, "checkpoint": "0" * 40, "agent": "SYNTHETIC"})
            journal.append("model.call", {**base, "seq": 1, "input_tokens": 1000 + n % 700, "output_tokens": 200,
                                          "cost_usd": 0.002,
                                          "status": 200, "model": "synthetic"})
            journal.append("iteration.ended", {**base, "decision": ("keep", "rollback", "stall")[n % 3],
                                               "reason": f"synthetic turn {n}", "tokens": 1000, "cost_usd": 0.002})


def page_loads(ws: Workspace, repeats: int = 5) -> dict[str, float]:
    server = Server(ws)
    try:
        paths = ["/", "/items", "/iterations", "/iterations?page=100", "/iterations?q=rollback", "/spend", "/journal"]
        return {path: statistics.median(server.seconds(path) for _ in range(repeats)) for path in paths}
    finally:
        server.stop()


def live_refresh(ws: Workspace, repeats: int = 7) -> float:
    """What an open overview costs the server when a journal gains a row: its fragment, then the plot image its new
    src asks for (the same heads), median seconds over `repeats` new rows."""
    server = Server(ws)
    try:
        took = []
        for n in range(repeats):
            with Journal.for_role(ws, "build") as journal:  # SYNTHETIC: one more row, so the heads move
                journal.append("note", {"synthetic": n})
            key = time.monotonic_ns()
            took.append(server.seconds("/?fragment=1") + server.seconds(f"/plot.svg?h={key}"))
        return statistics.median(took)
    finally:
        server.stop()


def memory(ws: Workspace, browser: object, minutes: float) -> tuple[float, float, int]:
    server = Server(ws)
    try:
        page = browser.new_page()  # type: ignore[attr-defined]
        page.goto(f"{server.base}/?token={server.token}")
        start = server.rss_mib()
        began = time.monotonic()
        deadline, turns, next_sample = began + minutes * 60, 0, began + 60
        while time.monotonic() < deadline:
            banach("build-loop", "once", "-w", str(ws.root), "--agent-command", STALLING_AGENT)
            banach("build-loop", "unblock", "-w", str(ws.root))
            turns += 1
            if turns % 5 == 0:
                banach("plan-loop", "once", "-w", str(ws.root))
            if time.monotonic() >= next_sample:
                print(f"  minute {round((time.monotonic() - began) / 60)}: {server.rss_mib():.0f} MiB after {turns} turns",
                      flush=True)
                next_sample += 60
        return start, server.rss_mib(), turns
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=10_000)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--memory-only", action="store_true", help="only part 3, with a sample each minute")
    parser.add_argument("--live-only", action="store_true", help="only an open overview's refresh (fragment and plot) "
                        "per new row, at --iterations")
    args = parser.parse_args()
    if args.live_only:
        folder = Path(tempfile.mkdtemp(prefix="banach-dashboard-bench-"))
        try:
            ws = workspace(folder / "large")
            synthetic_history(ws, args.iterations)
            print(f"live refresh of the overview at {args.iterations:,} iterations: "
                  f"{live_refresh(ws) * 1000:.0f} ms (fragment + plot, median of 7 new rows)")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="banach-dashboard-bench-"))
    try:
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", args=FLAGS)
            ws = workspace(folder / "live")
            if args.memory_only:
                start, end, turns = memory(ws, browser, args.minutes)
                print(f"memory: {start:.0f} MiB at start, {end:.0f} MiB after {args.minutes:g} min and {turns} turns")
                return
            latencies = sorted(row_to_browser(ws, browser, args.turns))
            p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
            print(f"row -> browser: {len(latencies)} turns, median {statistics.median(latencies) * 1000:.0f} ms, "
                  f"p95 {p95 * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms")
            small, large = workspace(folder / "small"), workspace(folder / "large")
            synthetic_history(small, 100)
            synthetic_history(large, args.iterations)
            few, many = page_loads(small), page_loads(large)
            print(f"| page | 100 iterations (ms) | {args.iterations:,} iterations (ms) | ratio |")
            print("|---|---:|---:|---:|")
            for path in few:
                print(f"| `{path}` | {few[path] * 1000:.0f} | {many[path] * 1000:.0f} | {many[path] / few[path]:.1f}x |")
            start, end, turns = memory(ws, browser, args.minutes)
            print(f"memory: {start:.0f} MiB at start, {end:.0f} MiB after {args.minutes:g} min and {turns} more turns "
                  "with the overview open and live")
            browser.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        os.sync()


if __name__ == "__main__":
    main()
