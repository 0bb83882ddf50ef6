"""The project's environment (shared/environment/): its build cold and warm, its reuse by a second workspace, what
the tests need beside every requirements file, and what it adds to a plan pass.

    python scripts/bench_env.py [--repeat 5] [--tools pip,uv] [--isolation none|landlock] [--no-pass] [--only reuse]

For each real project vendored in tests/data (humanize, python-slugify, python-dateutil), in a workspace made by
`banach init --code` from it:
- cold: the environment built with an empty cache (what a new machine pays; the index is reached);
- warm build: the environment built again with the download cache kept (a new key on a machine that built one before);
- cache hit: the environment asked for again, as every pass and turn does (the key is read from git objects);
- second workspace (reuse): a second workspace on the same project asks for it, side by side: before (a cache of its
  own, as each workspace had: it builds again, with its own download cache) and after (the machine's cache: found);
each by every [env] tool named (pip and uv), one after the other in one run.
Then a templating-like project (requirements/tests.txt named by tox.ini, beside docs, typing and a dev.txt made of
them, as Jinja lays them out): built with what its tests need, beside every requirements file (as before issue 41).
Then a fresh plan pass (memo off) of the bundled example, side by side: on Banach's interpreter, and in an
environment of the project's own (forced by [env] requirements), with the conformance runner under the venv's
interpreter. Medians of --repeat runs; isolation 'none' by default, so that the figures are the environment's own;
--isolation landlock measures the builds as the loops run them (each step in a view, through the index proxy).
Every workspace names its own [env] cache here, so nothing is written to the machine's.
"""
from __future__ import annotations

import argparse
import json
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
from shared.environment.cache import EnvCache  # noqa: E402
from shared.workspace import Workspace  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
PROJECTS = {"humanize 4.9.0": DATA / "humanize-4.9.0", "python-slugify 8.0.4": DATA / "python-slugify-8.0.4",
            "python-dateutil 2.9.0": DATA / "python-dateutil-2.9.0.post0"}


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b",
           "PATH": "/usr/bin:/bin", "HOME": str(repo)}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def _project_workspace(root: Path, library: Path, isolation: str, cache: Path, tool: str) -> Workspace:
    source = root / "source"
    shutil.copytree(library, source, ignore=shutil.ignore_patterns("VENDORED.md"))
    _git(source, "init", "-q", "-b", "main")
    _git(source, "add", "-A")
    _git(source, "commit", "-q", "-m", "sdist")
    ws = init_workspace(root / "ws", example=False, code_source=str(source))
    text = ws.config_file.read_text().replace('backend = "landlock"', f'backend = "{isolation}"')
    ws.config_file.write_text(text + f'\n[env]\ntool = "{tool}"\ncache = "{cache}"\n')
    return Workspace.open(ws.root)


def _ask(ws: Workspace) -> Path:
    code = ws.code_repo()
    env = project_env(ws, "plan", code, code.head() or "", ws.code)
    assert env.folder is not None
    return env.folder


def _size(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 2**20


def _environment_figures(name: str, library: Path, repeat: int, tool: str, isolation: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = _project_workspace(Path(tmp), library, isolation, Path(tmp) / "cache", tool)
        cache, downloads = EnvCache.of(ws, "plan").root, ws.role_dir("plan") / "env" / f"{tool}-cache"

        def build(keep_downloads: bool) -> None:
            shutil.rmtree(cache, ignore_errors=True)
            if not keep_downloads:
                shutil.rmtree(downloads, ignore_errors=True)
            _ask(ws)

        cold = timed(lambda: build(False), 1)
        warm = timed(lambda: build(True), max(1, repeat // 2))
        hit = timed(lambda: _ask(ws), repeat)
        folder = _ask(ws)
        requirements = len(json.loads((folder / "env.json").read_text())["requirements"])
        print(f"{name:22s} {tool:3s} {isolation:8s}  cold {cold[0]:6.1f} s   warm build {median_ms(warm) / 1000:6.1f} s   "
              f"cache hit {median_ms(hit):6.1f} ms   ({requirements} requirements, {_size(folder):.0f} MiB)")


def _reuse_figures(name: str, library: Path, repeat: int, tool: str, isolation: str) -> None:
    """A second workspace on the same project, side by side: with a cache of its own (before) and the machine's (after)."""
    before, after = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            machine = Path(tmp) / "machine-cache"
            _ask(_project_workspace(Path(tmp) / "first", library, isolation, machine, tool))
            own = _project_workspace(Path(tmp) / "second-own", library, isolation, Path(tmp) / "own-cache", tool)
            shared = _project_workspace(Path(tmp) / "second-shared", library, isolation, machine, tool)
            before += timed(partial(_ask, own), 1)
            after += timed(partial(_ask, shared), 1)
    print(f"{name:22s} {tool:3s} {isolation:8s}  second workspace: builds its own {median_ms(before) / 1000:6.1f} s "
          f"(before)   reuses the machine's {median_ms(after):6.1f} ms (after)   (median of {repeat})")


TEMPLATING = {
    "pyproject.toml": '[project]\nname = "templating"\nversion = "1.0"\ndependencies = ["MarkupSafe>=2.0"]\n',
    "tox.ini": "[testenv]\ndeps = -r requirements/tests.txt\ncommands = pytest\n"
               "[testenv:docs]\ndeps = -r requirements/docs.txt\n",
    "requirements/tests.txt": "pytest\niniconfig\n",
    "requirements/docs.txt": "sphinx\n",
    "requirements/typing.txt": "mypy\n",
    "requirements/dev.txt": "-r docs.txt\n-r tests.txt\n-r typing.txt\ntox\n",
}
EVERY_FILE = ["MarkupSafe>=2.0", "pytest", "iniconfig", "sphinx", "mypy", "tox"]  # what every requirements file names


def _needs_figures(tool: str, isolation: str) -> None:
    """What the tests need beside every requirements file (before issue 41), by [env] build = "none" naming them all."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "templating"
        for path, text in TEMPLATING.items():
            (source / path).parent.mkdir(parents=True, exist_ok=True)
            (source / path).write_text(text)
        (source / "templating").mkdir()
        (source / "templating" / "__init__.py").write_text("")
        results = {}
        for label, extra in (("every file", f'build = "none"\nrequirements = {json.dumps(EVERY_FILE)}\n'),
                             ("what the tests need", "")):
            ws = _project_workspace(Path(tmp) / label.replace(" ", "-"), source, isolation, Path(tmp) / label, tool)
            ws.config_file.write_text(ws.config_file.read_text() + extra)
            ws = Workspace.open(ws.root)
            took = timed(partial(_ask, ws), 1)[0]
            folder = _ask(ws)
            count = len(list(folder.glob("venv/lib/python*/site-packages/*.dist-info")))
            results[label] = f"{took:5.1f} s, {count} packages, {_size(folder):.0f} MiB"
        print(f"templating-like project {tool:3s} {isolation:8s}  every requirements file: {results['every file']}   "
              f"what its tests need: {results['what the tests need']}")


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
    parser.add_argument("--only", choices=["builds", "reuse", "needs", "pass"], default=None,
                        help="one part only: the builds, the second workspace's reuse, what the tests need, the pass")
    parser.add_argument("--isolation", default="none", choices=["none", "landlock"],
                        help="the builds' isolation backend (landlock: each step in a view, through the index proxy)")
    args = parser.parse_args()
    started = time.monotonic()
    parts = [args.only] if args.only else ["builds", "reuse", "needs", *([] if args.no_pass else ["pass"])]
    for tool in args.tools.split(","):
        for name, library in PROJECTS.items():
            if "builds" in parts:
                _environment_figures(name, library, args.repeat, tool, args.isolation)
            if "reuse" in parts:
                _reuse_figures(name, library, max(1, args.repeat // 2), tool, args.isolation)
        if "needs" in parts:
            _needs_figures(tool, args.isolation)
    if "pass" in parts:
        _pass_figures(args.repeat)
    print(f"({time.monotonic() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
