"""bench_trust.py --rounds: a blocked item's second round, measured against the old behaviour in the same run.

Six requirements (ST-1 .. ST-6, each "fileN.txt holds done"), a SIMULATED agent whose every attempt is wrong with
probability p (tests/helpers/agents/coin_flip.py, seeded by the run and the iteration), a one-rung ladder,
build.max_attempts = 4, driven through the CLIs as a user would: `spec-loop add`, then `banach run --until-certified`.
The same seeds run with build.rounds = 1 (blocked items wait for a person at once: the old behaviour) and with
build.rounds = 2 and 3 (3 is the default). After each run a held-out judge reads the code's files: a certificate on
code it rejects is false.
"""
from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AGENTS = ROOT / "tests" / "helpers" / "agents"
REQUIREMENTS = 6


@dataclass(frozen=True)
class RoundsRun:
    rounds: int
    p: float
    seed: int
    certified: bool
    correct: bool  # the held-out judge: every file holds "done"
    turns: int
    blocked: int
    seconds: float


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    modules = {"banach": "shared", "spec-loop": "spec_loop"}
    return subprocess.run([sys.executable, "-m", modules[args[0]], *args[1:]], capture_output=True, text=True)


def canon() -> str:
    blocks = [f"## ST-{n}: file {n} holds done\npriority: {1 + n % 3}\npaths: file{n}.txt\nchecks:\n"
              f"  - grep -qx done file{n}.txt\n\nfile{n}.txt holds the word done.\n" for n in range(1, REQUIREMENTS + 1)]
    return "---\narea: rounds\n---\n\n" + "\n".join(blocks)


def one(rounds: int, p: float, seed: int, max_turns: int) -> RoundsRun:
    folder = Path(tempfile.mkdtemp(prefix="banach-rounds-"))
    try:
        ws = folder / "ws"
        made = _cli("banach", "init", str(ws))
        assert made.returncode == 0, made.stdout + made.stderr
        config = ws / "banach.toml"
        text = config.read_text().replace('agent = "claude"', 'agent = "scripted"')
        text = text.replace("[isolation]\n", f'[isolation]\nread_paths = ["{AGENTS}"]\n', 1)
        text = text.replace("[build]\n", f"[build]\nrounds = {rounds}\nmax_attempts = 4\n", 1)
        config.write_text(text + f'\n[agents.scripted]\npreset = "command"\ncommand = "{sys.executable} '
                                 f'{AGENTS / "coin_flip.py"} {p} {seed}"  # SIMULATED: a scripted stand-in for an LLM\n')
        draft = folder / "rounds.md"
        draft.write_text(canon())
        added = _cli("spec-loop", "add", str(draft), "--workspace", str(ws))
        assert added.returncode == 0, added.stdout + added.stderr
        started = time.monotonic()
        ran = _cli("banach", "run", "--until-certified", "--max-turns", str(max_turns), "--workspace", str(ws))
        seconds = time.monotonic() - started
        status = json.loads(_cli("banach", "status", "--json", "--workspace", str(ws)).stdout)
        correct = all((ws / "code" / f"file{n}.txt").is_file() and (ws / "code" / f"file{n}.txt").read_text() == "done\n"
                      for n in range(1, REQUIREMENTS + 1))
        return RoundsRun(rounds, p, seed, ran.returncode == 0, correct, int(status["build"]["iterations"]),
                         int(status["build"]["blocked"]), seconds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench(p: float, seeds: int, max_turns: int, jobs: int = 2, counts: tuple[int, ...] = (1, 2)) -> list[RoundsRun]:
    tasks = [(rounds, seed) for seed in range(1, seeds + 1) for rounds in counts]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = list(pool.map(lambda task: one(task[0], p, task[1], max_turns), tasks))
    for run in runs:
        print(f"# {run}", file=sys.stderr, flush=True)
    return runs


def table(runs: list[RoundsRun]) -> str:
    lines = ["| p | build.rounds | runs | certified | false certificates | blocked at the end (runs) | "
             "turns, median [min-max] | median / ideal | seconds, median |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for p in sorted({r.p for r in runs}):
        ideal = REQUIREMENTS / (1 - p)
        for rounds in sorted({r.rounds for r in runs}):
            group = [r for r in runs if r.p == p and r.rounds == rounds]
            turns = [r.turns for r in group]
            lines.append(f"| {p:g} | {rounds}{' (old)' if rounds == 1 else ''} | {len(group)} | "
                         f"{sum(r.certified for r in group)} | {sum(r.certified and not r.correct for r in group)} | "
                         f"{sum(r.blocked > 0 for r in group)} | {statistics.median(turns):g} [{min(turns)}-{max(turns)}] "
                         f"| {statistics.median(turns) / ideal:.2f} (ideal {ideal:g}) | "
                         f"{statistics.median(r.seconds for r in group):.1f} |")
    return "\n".join(lines)
