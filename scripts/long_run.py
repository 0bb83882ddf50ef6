"""A long real run, for looking at its convergence plot: 50+ plan passes, several canon versions, blocked items.

    python scripts/long_run.py [--folder DIR] [--phases 5] [--per-phase 12]

Each phase lands one canon document of --per-phase requirements through `spec-loop add` (a new canon version; the
second requirement of every phase cannot be met, so its item is blocked), then calls `banach run --until-certified
--max-turns 1` until the phase's items are done or blocked: one build turn per run, so every turn is followed by a
plan pass, as it is when build's commits outpace plan. The agent is SIMULATED (tests/helpers/agents/every_file.py, a
scripted stand-in for an LLM); spec, plan, build, the journals and the plot are the real ones. Prints the plot's path
and the run's figures. Takes a few minutes on two cores.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AGENTS = ROOT / "tests" / "helpers" / "agents"


def banach(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    modules = {"banach": "shared", "spec-loop": "spec_loop"}
    return subprocess.run([sys.executable, "-m", modules[args[0]], *args[1:]], capture_output=True, text=True, cwd=cwd)


def document(phase: int, count: int) -> str:
    blocks = []
    for index in range(count):
        n = phase * 100 + index
        hard = index == 1  # the agent writes "done"; this check wants "right": never met, blocked after its attempts
        blocks.append(f"## ST-{n}: file {n} holds {'right' if hard else 'done'}\npriority: {1 + index % 3}\n"
                      f"paths: file{n}.txt\nchecks:\n  - grep -qx {'right' if hard else 'done'} file{n}.txt\n\n"
                      f"file{n}.txt holds the word {'right' if hard else 'done'}.\n")
    return f"---\narea: phase{phase}\n---\n\n" + "\n".join(blocks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=None)
    parser.add_argument("--phases", type=int, default=5)
    parser.add_argument("--per-phase", type=int, default=12)
    options = parser.parse_args()
    folder = options.folder or Path(tempfile.mkdtemp(prefix="banach-long-run-"))
    ws = folder / "ws"
    made = banach("banach", "init", str(ws))
    if made.returncode != 0:
        print(made.stdout + made.stderr, file=sys.stderr)
        return 1
    config = ws / "banach.toml"
    text = config.read_text().replace('agent = "claude"', 'agent = "scripted"')
    text = text.replace("[isolation]\n", f'[isolation]\nread_paths = ["{AGENTS}"]\n', 1)
    config.write_text(text + f'\n[agents.scripted]\npreset = "command"\ncommand = "{sys.executable} '
                             f'{AGENTS / "every_file.py"}"  # SIMULATED: a scripted stand-in for an LLM\n')
    started = time.monotonic()
    runs = 0
    for phase in range(1, options.phases + 1):
        draft = folder / f"phase{phase}.md"
        draft.write_text(document(phase, options.per_phase))
        added = banach("spec-loop", "add", str(draft), "--workspace", str(ws))
        if added.returncode != 0:
            print(added.stdout + added.stderr, file=sys.stderr)
            return 1
        for _ in range(options.per_phase * 3):
            result = banach("banach", "run", "--until-certified", "--max-turns", "1", "--workspace", str(ws))
            runs += 1
            last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr
            if "nothing can progress" in last or "CERTIFIED" in last.replace("NOT CERTIFIED", ""):
                break
    plot = banach("banach", "plot", "--workspace", str(ws))
    status = json.loads(banach("banach", "status", "--json", "--workspace", str(ws)).stdout)
    print(plot.stdout.strip())
    print(f"{runs} runs of banach run in {time.monotonic() - started:.0f} s; plan passes {status['plan_passes']}, "
          f"canon v{status['canon_version']}, residual {status['residual']}, blocked "
          f"{', '.join(status['build'].get('blocked_items', [])) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
