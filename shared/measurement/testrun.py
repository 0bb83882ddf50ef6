"""Run canon's conformance tests and report each test's outcome outside the exit code.

    BANACH_REPORT_FD=N python -I -S /path/to/shared/measurement/testrun.py --code DIR [--code DIR]... \
        [--plugin NAME]... -- PYTEST_ARGS...

Started by absolute path in isolated mode (-I): neither the working directory, nor PYTHONPATH, nor this
file's folder is on sys.path, so nothing in the work tree can stand in for pytest or for this runner. And
without the site module (-S): the interpreter's site-packages are put on sys.path here, with the folders their
.pth files name inside the interpreter's prefix, but no .pth `import` line and no sitecustomize runs. An
environment's packages were installed by a build that ran other people's code and the project's own
(shared/environment/); nothing they left may run in this process before pytest's own reports are in place. The
report goes to descriptor N, a pipe the measuring process made for this run alone (shared/process.py): no
path names it, so no other check, and nothing outside this process, can write it or swap it. The process
makes itself non-dumpable first, so that other processes of its user cannot open its descriptors through
/proc either. The pytest plugins canon names (--plugin, shared/measurement/plugins.py) are imported from the
environment right after pytest, before the code's roots are on sys.path: a module of the code's named like one is
never what loads. A line is written and flushed as each test ends, and the last line says pytest finished; a
run without that line measures nothing (shared/measurement/conformance.py). Only then are the code's import roots (its
root, or src/ for a src layout) put first on sys.path, so the project's own modules (even ones named `shared`,
`canon` or `pytest`) are what its tests import, before any installed copy. It runs under the project's
interpreter (shared/environment/) as well as Banach's.

The tests themselves are not on disk where the code could read them: the Python files of the run's canon are empty
placeholders, and their sources (with the run's own test names and its canaries) come on standard input, read whole
before anything else, then served from memory by an import finder placed ahead of every other, with pytest's
assertion rewriting applied as pytest would. Standard input is then /dev/null. With --no-source (a held-back run) the
sources are not put in linecache either, so tracebacks do not quote them.

This file imports nothing from Banach: in this process Banach's packages must neither shadow the
project's nor be shadowed by them.
"""
from __future__ import annotations

import ast
import importlib.util
import json
import linecache
import os
import sys
from typing import IO, Any

REPORT_FD_ENV = "BANACH_REPORT_FD"  # shared.process.REPORT_FD_ENV (this file imports nothing of Banach's)
PR_SET_DUMPABLE = 4


def _not_dumpable() -> None:
    """No other process of this user may ptrace this one or open its /proc/PID/fd, mem or environ."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


class Reporter:
    """A pytest plugin: one JSON line per test phase that did not simply pass, and per passed call."""

    def __init__(self, channel: IO[str]) -> None:
        self.channel = channel

    def _write(self, record: dict[str, Any]) -> None:
        self.channel.write(json.dumps(record) + "\n")
        self.channel.flush()

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or report.outcome != "passed":
            self._write({"test": report.nodeid, "when": report.when, "outcome": report.outcome})

    def pytest_collectreport(self, report: Any) -> None:
        if report.outcome == "failed":
            self._write({"collect_error": report.nodeid})

    def pytest_sessionfinish(self, session: Any, exitstatus: int) -> None:
        self._write({"finished": int(exitstatus)})


def _is_test_module(path: str) -> bool:
    """What pytest rewrites the asserts of by default: test modules (test_*.py, *_test.py) and conftest.py."""
    name = os.path.basename(path)
    return name == "conftest.py" or (name.startswith("test_") and name.endswith(".py")) or name.endswith("_test.py")


class FromMemory:
    """An import finder and loader for the run's canon sources, which exist on disk only as empty placeholders. It
    looks along sys.path (or a package's path) as the standard finder does: the first entry that holds the module
    decides, so a module of the code's that comes first on sys.path is still the code's."""

    def __init__(self, sources: dict[str, str], *, show: bool) -> None:
        self.sources = {os.path.realpath(path): text for path, text in sources.items()}
        self.show = show

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        tail = fullname.rpartition(".")[2]
        for entry in (list(path) if path is not None else sys.path):
            base = os.path.realpath(os.path.join(entry or os.getcwd(), tail))
            for candidate, package in ((base + ".py", False), (os.path.join(base, "__init__.py"), True)):
                if candidate in self.sources:
                    return importlib.util.spec_from_file_location(
                        fullname, candidate, loader=self,  # type: ignore[arg-type]
                        submodule_search_locations=[base] if package else None)
            if os.path.exists(base + ".py") or os.path.isdir(base):
                return None  # the entry holds a module of that name that is not canon's: the standard finder's
        return None

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        __tracebackhide__ = True  # pytest leaves this frame out of what it prints: the test's own frames tell why  # noqa: F841
        path = module.__spec__.origin
        source = self.sources[path]
        tree = ast.parse(source, filename=path)
        if _is_test_module(path):
            from _pytest.assertion.rewrite import rewrite_asserts

            rewrite_asserts(tree, source.encode("utf-8"), path, None)
        if self.show:
            linecache.cache[path] = (len(source), None, source.splitlines(keepends=True), path)
        exec(compile(tree, path, "exec", dont_inherit=True), module.__dict__)

    def pytest_load_initial_conftests(self, early_config: Any) -> None:
        """Ahead of pytest's own assertion-rewriting finder, which reads files from disk (installed just before)."""
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        sys.meta_path.insert(0, self)



def _read_sources() -> dict[str, str]:
    """The run's sources, whole, from standard input; then standard input is /dev/null."""
    data = sys.stdin.buffer.read()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    if not data.strip():
        return {}
    sources = json.loads(data.decode("utf-8"))
    return {str(path): str(text) for path, text in sources.items()}


def _site_folders() -> list[tuple[str, str]]:
    """(site-packages folder, the prefix it belongs to), as site.py would find them: a venv's own (its pyvenv.cfg
    beside the executable or one folder up; venv always lays them out as lib/pythonX.Y/site-packages), then the base
    interpreter's when the venv includes the system's packages or there is no venv. Without the site module sys.prefix
    is still the base interpreter's, and a distribution's patched site.getsitepackages() (Debian's dist-packages)
    would name the base's folders for a venv too: either would measure the code against the wrong packages."""
    import site

    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    folder = os.path.dirname(os.path.abspath(sys.executable))
    for venv in (folder, os.path.dirname(folder)):
        config = os.path.join(venv, "pyvenv.cfg")
        if not os.path.isfile(config):
            continue
        with open(config, encoding="utf-8") as handle:
            lines = [line.partition("=") for line in handle.read().splitlines()]
        system = any(key.strip() == "include-system-site-packages" and value.strip().lower() == "true"
                     for key, _, value in lines)
        own = [(os.path.join(venv, lib, version, "site-packages"), venv) for lib in ("lib", "lib64")]
        return own + ([(path, sys.prefix) for path in site.getsitepackages()] if system else [])
    return [(path, sys.prefix) for path in site.getsitepackages()]


def _site_packages() -> list[str]:
    """What site.py would add for this interpreter, without running anything: the site-packages folders, then the
    folders their .pth files name, when those lie inside the same prefix (a .pth's `import` lines are code, and are
    skipped)."""
    found: list[str] = []
    for folder, prefix in _site_folders():
        if not os.path.isdir(folder) or os.path.realpath(folder) in map(os.path.realpath, found):
            continue
        found.append(folder)
        inside = os.path.realpath(prefix) + os.sep
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".pth") or name.startswith("."):
                continue
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    lines = handle.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in lines:
                line = line.strip()
                if not line or line.startswith(("#", "import ", "import\t")):
                    continue
                path = os.path.realpath(os.path.join(folder, line))
                if path.startswith(inside) and os.path.isdir(path) and path not in found:
                    found.append(path)
    return found


def _plugins(names: list[str]) -> str:
    """Import the plugins canon names (a module, or a pytest11 entry point of that name) from the environment;
    returns what could not be imported, or ""."""
    import importlib
    import importlib.metadata

    for name in names:
        points = [point for point in importlib.metadata.entry_points(group="pytest11") if point.name == name]
        try:
            for point in points:
                importlib.import_module(point.module)
            if not points:
                importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 -- said whole, and the run measures nothing
            return (f"testrun: canon names the pytest plugin {name}, which the project's environment cannot import "
                    f"({type(exc).__name__}: {exc}); add the package that provides it to the project's test "
                    "dependencies, or [env] requirements in banach.toml")
    return ""


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: BANACH_REPORT_FD=N python -I -S testrun.py --code DIR [--plugin NAME] [--no-source] -- PYTEST_ARGS "
              "< SOURCES",
              file=sys.stderr)
        return 2
    _not_dumpable()
    split = argv.index("--")
    options, pytest_args = argv[:split], argv[split + 1:]
    roots = [options[i + 1] for i in range(len(options) - 1) if options[i] == "--code"]
    named = [options[i + 1] for i in range(len(options) - 1) if options[i] == "--plugin"]
    sources = _read_sources()
    descriptor = os.environ.pop(REPORT_FD_ENV, "")
    if not descriptor.isdigit():
        print(f"testrun: no report channel ({REPORT_FD_ENV} is not set); nothing can be measured", file=sys.stderr)
        return 2
    os.set_inheritable(int(descriptor), False)  # the tests' own subprocesses do not get it
    channel = os.fdopen(int(descriptor), "w", encoding="utf-8")  # held open for the whole run
    if sys.flags.no_site:
        sys.path.extend(_site_packages())
    import pytest  # before the code is on sys.path: a project's pytest.py cannot stand in for it

    FromMemory.pytest_load_initial_conftests = pytest.hookimpl(tryfirst=True)(  # type: ignore[method-assign]
        FromMemory.pytest_load_initial_conftests)
    missing = _plugins(named)  # before the code is on sys.path too
    if missing:
        print(missing, file=sys.stderr)
        return 2

    canon = FromMemory(sources, show="--no-source" not in options)
    sys.meta_path.insert(0, canon)
    sys.path[:0] = roots  # the project's import roots, in order, before anything installed
    return int(pytest.main(pytest_args, plugins=[Reporter(channel), canon]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
