"""The project's environment (shared/environment.py): its build cold and warm, and what it adds to a plan pass.

    python scripts/bench_env.py [--repeat 5] [--tools pip,uv] [--no-pass]

For each real project vendored in tests/data (humanize, python-slugify, python-dateutil), in a workspace made by
`banach init --code` from it:
- cold: the environment built with an empty cache (what a new machine pays; the index is reached);
- warm build: the environment built again with the cache kept (a new key on a machine that built one before);
- cache hit: the environment asked for again, as every pass and turn does (the key is read from git objects);
each by every [env] tool named (pip and uv), one after the other in one run.
Then a fresh plan pass (memo off) of the bundled example, side by side: on Banach's interpreter, and in an
environment of the project's own (forced by [env] requirements), with the conformance runner under the venv's
interpreter. Medians of --repeat runs; isolation 'none' by default, so that the figures are the environment's own;
--isolation landlock measures the builds as the loops run them (sandboxed, through the index proxy).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from plan_loop.passes import PlanService  # noqa: E402
from scripts._bench import median_ms, timed  # noqa: E402
from shared.app.init import init_workspace  # noqa: E402
from shared.environment import project_env  # noqa: E402
from shared.workspace import Workspace  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
PROJECTS = {"humanize 4.9.0": DATA / "humanize-4.9.0", "python-slugify 8.0.4": DATA / "python-slugify-8.0.4",
            "python-dateutil 2.9.0": DATA / "python-dateutil-2.9.0.post0"}


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b",
           "PATH": "/usr/bin:/bin", "HOME": str(repo)}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def _project_workspace(root: Path, library: Path, isolation: str = "none") -> Workspace:
    source = root / "source"
    shutil.copytree(library, source, ignore=shutil.ignore_patterns("VENDORED.md"))
    _git(source, "init", "-q", "-b", "main")
    _git(source, "add", "-A")
    _git(source, "commit", "-q", "-m", "sdist")
    ws = init_workspace(root / "ws", example=False, code_source=str(source))
    ws.config_file.write_text(ws.config_file.read_text().replace('backend = "landlock"', f'backend = "{isolation}"'))
    return Workspace.open(ws.root)


def _environment_figures(name: str, library: Path, repeat: int, tool: str, isolation: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = _project_workspace(Path(tmp), library, isolation)
        ws.config_file.write_text(ws.config_file.read_text() + f'\n[env]\ntool = "{tool}"\n')
        ws = Workspace.open(ws.root)
        code, head = ws.code_repo(), ws.code_repo().head() or ""
        env_dir = ws.role_dir("plan") / "env"

        def build(keep_cache: bool) -> None:
            for entry in env_dir.glob("*") if env_dir.exists() else []:
                if keep_cache and entry.name.endswith("-cache"):
                    continue
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
            project_env(ws, "plan", code, head, ws.code)

        cold = timed(lambda: build(False), 1)
        warm = timed(lambda: build(True), max(1, repeat // 2))
        hit = timed(lambda: project_env(ws, "plan", code, head, ws.code), repeat)
        env = project_env(ws, "plan", code, head, ws.code)
        size = sum(p.stat().st_size for p in Path(env.python).parents[2].rglob("*") if p.is_file() and not p.is_symlink())
        print(f"{name:22s} {tool:3s} {isolation:8s}  cold {cold[0]:6.1f} s   warm build {median_ms(warm) / 1000:6.1f} s   "
              f"cache hit {median_ms(hit):6.1f} ms   ({len(env.requirements)} requirements, {size / 2**20:.0f} MiB)")


def _pass_figures(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for label, extra in (("Banach's interpreter", ""), ("project environment", '\n[env]\nrequirements = ["iniconfig"]\n')):
            ws = init_workspace(Path(tmp) / label.replace(" ", "-").replace("'", ""), example=True)
            text = ws.config_file.read_text().replace('backend = "landlock"', 'backend = "none"')
            ws.config_file.write_text(text + extra)
            ws = Workspace.open(ws.root)
            service = PlanService(ws)
            try:
                service.run_pass(fresh=True)  # builds the environment once
                results[label] = timed(partial(service.run_pass, fresh=True), repeat)
            finally:
                service.close()
        own, project = median_ms(results["Banach's interpreter"]), median_ms(results["project environment"])
        print(f"fresh plan pass of the example (5 conformance runs): Banach's interpreter {own:.0f} ms, project "
              f"environment {project:.0f} ms, ratio {project / own:.2f}x (median of {repeat})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tools", default="pip,uv", help="[env] tool values, measured side by side")
    parser.add_argument("--no-pass", action="store_true", help="only the environments' builds")
    parser.add_argument("--isolation", default="none", choices=["none", "landlock"],
                        help="the builds' isolation backend (landlock: sandboxed, through the index proxy)")
    args = parser.parse_args()
    started = time.monotonic()
    for name, library in PROJECTS.items():
        for tool in args.tools.split(","):
            _environment_figures(name, library, args.repeat, tool, args.isolation)
    if not args.no_pass:
        _pass_figures(args.repeat)
    print(f"({time.monotonic() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
