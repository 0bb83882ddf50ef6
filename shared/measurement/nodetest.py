"""A JavaScript or TypeScript conformance test file run by Node's own test runner (`node --test`), one file a run.

    run = prepare(canon_dir, code_dir, "tests/slug.test.ts", nodes, folder, node_modules=...)
    outcome = process.run(run.request(env=..., timeout=..., limits=..., confine=...))
    verdict = run.judge(outcome)

The run's tree (folder/tree) is the code's files, canon's test file at its canon path with the run's names and its
canaries (shared/measurement/suite_canaries.py), and the project's node_modules (shared/environment/, `npm ci` of its
lockfile) by a link; read-only. TypeScript runs through the project's own tsx (`--import tsx`), as its own
`node --test` would, or, without tsx, through its own typescript (node_typescript.mjs: types erased, not
checked). Node's runner starts the file in a child process and reads that child's events; Banach's reporter
(node_reporter.mjs) runs in the runner's process and writes the report channel, which shared/measurement/suiterun.py
hands the runner as its standard output alone. What code under test can still do from the child: write events for
its own file's tests to its standard output (the runner's protocol), or open its runner's descriptors through /proc
(same user, same view) and write the channel; the canaries and the run names are what catch a blanket forgery there
(SECURITY.md).
"""
from __future__ import annotations

import shutil
from pathlib import Path

from shared.export import remove_tree
from shared.measurement.filerun import FileRun, driver, expected_of
from shared.measurement.suite_canaries import prepare as plant
from shared.measurement.suites import TYPESCRIPT, test_names

REPORTER = Path(__file__).resolve().with_name("node_reporter.mjs")
TYPESCRIPT_HOOKS = Path(__file__).resolve().with_name("node_typescript.mjs")  # the project's typescript, without tsx
NO_TSX = ("TypeScript conformance tests run through the project's own tsx (node --import tsx) or typescript: add one "
          "to its devDependencies and package-lock.json (npm install --save-dev tsx)")


def node() -> str:
    return shutil.which("node") or "node"


def _copy(code_dir: Path, tree: Path) -> None:
    shutil.copytree(code_dir, tree, symlinks=True, ignore=shutil.ignore_patterns(".git", "node_modules"))


def _read_only(tree: Path) -> None:
    for path in [*tree.rglob("*"), tree]:
        if not path.is_symlink():
            path.chmod(0o555 if path.is_dir() else 0o444)


def _link(tree: Path, node_modules: Path) -> None:
    link = tree / "node_modules"
    if link.exists() or link.is_symlink():
        remove_tree(link)
    link.symlink_to(node_modules, target_is_directory=True)


def code_with_packages(code_dir: Path, tree: Path, node_modules: Path) -> Path:
    """A read-only copy of the code with the project's node_modules linked in, where `node --import tsx ...` finds
    what the project's own commands do (a sealed case's `run`, shared/measurement/sealed.py)."""
    _copy(code_dir, tree)
    _link(tree, node_modules)
    _read_only(tree)
    return tree


def prepare(canon_dir: Path, code_dir: Path, file: str, nodes: tuple[str, ...], folder: Path, *,
            node_modules: Path | None = None, taken: set[str] | None = None) -> FileRun:
    """folder: the run's own, made new. node_modules: the project's installed packages, or None when it has none."""
    remove_tree(folder)
    (folder / "tmp").mkdir(parents=True)
    tree = folder / "tree"
    _copy(code_dir, tree)
    source = (canon_dir / file).read_text(encoding="utf-8", errors="replace")
    suite = plant(source, file, "node", taken if taken is not None else set())
    target = tree / file
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() or target.is_symlink():
        target.unlink()
    target.write_text(suite.source, encoding="utf-8")
    if node_modules is not None:
        _link(tree, node_modules)
    _read_only(tree)
    notes: tuple[str, ...] = ()
    loader: tuple[str, ...] = ()
    if file.endswith(tuple(f".test{suffix}" for suffix in TYPESCRIPT)):
        if node_modules is not None and (node_modules / "tsx").is_dir():
            loader = ("--import", "tsx")
        elif node_modules is not None and (node_modules / "typescript").is_dir():
            loader = ("--import", str(TYPESCRIPT_HOOKS))
        else:
            notes = (NO_TSX,)
    command = (node(), *loader, "--test", f"--test-reporter={REPORTER}", "--test-reporter-destination=stdout",
               str(target))
    env = {"BANACH_SUITE_FILE": file, "BANACH_SUITE_PATH": str(target), "NODE_OPTIONS": "", "NODE_PATH": "",
           "NO_COLOR": "1", "FORCE_COLOR": "0"}
    readable = (tree, *((node_modules,) if node_modules is not None else ()))
    return FileRun("node", file, folder, driver(tree, file, command), tree, env, readable,
                   expected_of(file, test_names(source, file), nodes), suite.planted, suite.names,
                   lambda report: (report, ""), notes, ((str(tree) + "/", ""),))
