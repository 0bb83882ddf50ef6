"""Helpers the benchmarks share: temp workspaces and medians."""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from canon.store import CanonStore
from shared.app.init import init_workspace
from shared.workspace import Workspace


def workspace(root: Path, canon_text: str, *, backend: str, extra: str = "") -> Workspace:
    ws = init_workspace(root, example=False)
    text = ws.config_file.read_text().replace('backend = "landlock"', f'backend = "{backend}"')
    ws.config_file.write_text(text + extra)
    store = CanonStore(ws.canon)
    store.commit({"requirements/bench.md": canon_text}, "benchmark canon", {"added": ["(generated)"]})
    return Workspace.open(ws.root)


def fill_code(ws: Workspace, files: int) -> None:
    for index in range(files):
        folder = ws.code / "src" / f"d{index // 500:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index:05d}.py").write_text(f"X = {index}\n")
    ws.code_repo().commit_all(f"{files} files", {}, role="init")


def timed(action: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return times


def median_ms(times: list[float]) -> float:
    return statistics.median(times) * 1000


def run_at(rev: str, script: str, args: list[str]) -> str:
    """The output of scripts/SCRIPT as commit rev has it, in this same run: rev is exported to a temp folder and run by
    a venv that sees this interpreter's packages but imports Banach from that folder first, so that the children it
    starts (`python -I -m shared...`) run rev's code too. A side-by-side baseline."""
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        code, venv = Path(tmp) / "code", Path(tmp) / "venv"
        code.mkdir()
        archive = subprocess.run(["git", "-C", str(root), "archive", rev], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
        site = next(venv.glob("lib/python*/site-packages"))
        (site / "zz_banach_at_rev.pth").write_text(f"{code}\n")  # before the system's: its editable finder comes last
        return subprocess.run([str(venv / "bin" / "python"), f"scripts/{script}", *args], cwd=code, capture_output=True,
                              text=True, check=True).stdout


def table_rows(text: str, columns: int) -> list[list[str]]:
    """The rows of a Markdown table a benchmark printed, as cells."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in text.splitlines() if line.startswith("|")]
    return [row for row in rows if len(row) == columns and not set(row[0]) <= {"-", ":"}]
