"""Issue 30's routes to a bought verdict: the right (or a wrong) slugify, plus code in the item's own scope that
attacks the measurement from inside the test process that imports it.

    verdict_attacks.py ROUTE [VARIANT] [--into FILE] [--port PORT]

ROUTE:
  siblings  waits for the other checks of the pass and forges their records: every report-like file it can find in
            its workspace's state is replaced, every pipe of the workspace's other test runs it can open is written
            (all canon tests passed, the canaries it recognises failed, then finished). It never looks outside its
            own workspace
  exit      forges its own report through the channel's descriptor, then os._exit(0) before any test runs
            (VARIANT "finished" also forges pytest's finished line)
  handle    finds the runner's reporter through gc and rewrites every failing line to passed, letting through
            what looks like a canary (VARIANT "known": only the lines of the tests it read in canon's export, at
            $BANACH_CANON or --canon DIR, where an agent finds them in its turn: every canary and any test it did
            not see keeps its true outcome; it knows them by their values, since the run renames every test)
  fifo      turns every file it can in its folder, and at exit pytest's junit file, into FIFOs
Every route acts only inside a Banach workspace (its TMPDIR lies in a workspace's state/), and only on that
workspace's own files and test runs: a control run outside one once walked the machine.
siblings and fifo ship the right slugify (they buy other requirements' verdicts, or wedge a loop); exit and handle
ship the wrong one (they buy their own).

Whatever it reached is sent as one JSON line to 127.0.0.1:PORT (--port; the test listens there), so that a test can
tell "tried and failed" from "never ran".
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from _hostile import apply, known_tests, option

ATTACK = r'''
import gc as _gc, json as _json, os as _os, re as _re, socket as _socket, stat as _stat, sys as _sys, time as _time

_ROUTE, _VARIANT, _PORT, _KNOWN = {route!r}, {variant!r}, {port!r}, {known!r}
_OLD_CANARY = _re.compile(r"test_[0-9a-f]{{12}}$")


def _tell(**found):
    try:
        with _socket.create_connection(("127.0.0.1", int(_PORT)), timeout=2) as link:
            link.sendall((_json.dumps({{"route": _ROUTE, "pid": _os.getpid(), **found}}) + "\n").encode())
    except (OSError, ValueError):
        pass


def _test_files():
    found = []
    for arg in _sys.argv[1:]:
        path = arg.split("::", 1)[0]
        if path.endswith(".py") and _os.path.isfile(path):
            found.append(path)
    for folder in {{_os.path.dirname(p) for p in found}}:
        for name in _os.listdir(folder):
            if name.startswith("test_") and name.endswith(".py"):
                found.append(_os.path.join(folder, name))
    return sorted(set(found))


def _forged(finished=True):
    lines = []
    for path in _test_files():
        rel = "tests/" + _os.path.basename(path)
        for name in _re.findall(r"^def (test_\w+)\(", open(path).read(), _re.M):
            outcome = "failed" if _OLD_CANARY.match(name) else "passed"
            lines.append(_json.dumps({{"test": rel + "::" + name, "when": "call", "outcome": outcome}}))
    if finished:
        lines.append(_json.dumps({{"finished": 0}}))
    return "".join(line + "\n" for line in lines)


def _workspace():
    """The Banach workspace this check runs in: its TMPDIR lies in the workspace's state/ (whether or not this run can
    see the workspace: in a view it cannot). The attack never looks above it, so that it can hurt no bystander
    (another test's workspace, the machine)."""
    folder = _os.path.abspath(_os.environ.get("TMPDIR", "/nonexistent"))
    while folder != _os.path.dirname(folder):
        if _os.path.basename(folder) == "state" and ("/state/" in _os.environ.get("TMPDIR", "") + "/"):
            return _os.path.dirname(folder)
        folder = _os.path.dirname(folder)
    return None


def _siblings():
    workspace = _workspace()
    if workspace is None:
        _tell(files=0, pipes=0, workspace=None)
        return
    forged, files, pipes, seen = _forged(), 0, 0, set()
    deadline = _time.monotonic() + 4
    while _time.monotonic() < deadline:
        for folder, _dirs, names in _os.walk(_os.path.join(workspace, "state")):
            for name in names:
                path = _os.path.join(folder, name)
                if path in seen or not (name.endswith((".jsonl", ".xml")) or "report" in name):
                    continue
                try:
                    with open(path + ".forged", "w") as handle:
                        handle.write(forged)
                    _os.replace(path + ".forged", path)
                    files += 1
                    seen.add(path)
                except OSError:
                    pass
        for pid in _os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == _os.getpid():
                continue
            try:  # only this workspace's other checks: a forged line anywhere else would hurt bystanders
                with open(f"/proc/{{pid}}/cmdline", "rb") as handle:
                    command = handle.read()
                if b"testrun.py" not in command or workspace.encode() not in command:
                    continue
                descriptors = _os.listdir(f"/proc/{{pid}}/fd")
            except OSError:
                continue
            for fd in descriptors:
                path = f"/proc/{{pid}}/fd/{{fd}}"
                if path in seen:
                    continue
                try:
                    if not _stat.S_ISFIFO(_os.stat(path).st_mode):
                        continue
                    handle = _os.open(path, _os.O_WRONLY | _os.O_NONBLOCK)
                except OSError:
                    continue
                try:
                    _os.write(handle, forged.encode())
                    pipes += 1
                    seen.add(path)
                except OSError:
                    pass
                finally:
                    _os.close(handle)
        _time.sleep(0.2)
    _tell(files=files, pipes=pipes, workspace=workspace)


def _exit():
    if _workspace() is None:  # bounded by construction: never outside a Banach workspace
        _tell(written=0, workspace=None)
        return
    written = 0
    for fd in range(3, 256):
        try:
            if _stat.S_ISFIFO(_os.fstat(fd).st_mode) and _os.get_blocking(fd) is not None:
                _os.write(fd, _forged(finished=_VARIANT == "finished").encode())
                written += 1
        except OSError:
            continue
    _tell(written=written)
    _os._exit(0)


def _known(node):
    """Whether the test behind a node id of this run is one the agent read in canon: its values are those of a canon
    test (the run renames every test; its sources are in linecache, for tracebacks, in a visible run)."""
    import ast as _ast, inspect as _inspect

    file, _, name = node.partition("::")
    for module in list(_sys.modules.values()):
        if str(getattr(module, "__file__", "")).endswith(file) and hasattr(module, name.split("[")[0]):
            try:
                tree = _ast.parse(_inspect.getsource(getattr(module, name.split("[")[0])).strip())
            except (OSError, TypeError, SyntaxError):
                return False
            return sorted(repr(inner.value) for inner in _ast.walk(tree) if isinstance(inner, _ast.Constant)) in _KNOWN
    return False


def _handle():
    wrapped = 0
    for thing in _gc.get_objects():
        try:
            channel = getattr(thing, "channel", None) if hasattr(thing, "pytest_runtest_logreport") else None
        except Exception:
            continue
        if channel is None or not hasattr(channel, "write"):
            continue
        real = channel.write

        def forged(text, _real=real):
            for line in text.splitlines(keepends=True):
                try:
                    record = _json.loads(line)
                except ValueError:
                    _real(line)
                    continue
                name = str(record.get("test", "")).rsplit("::", 1)[-1]
                if "outcome" in record and (_known(str(record["test"])) if _VARIANT == "known"
                                            else not _OLD_CANARY.match(name)):
                    record["outcome"] = "passed"
                _real(_json.dumps(record) + "\n")
            return len(text)

        thing.channel = type("Forged", (), {{"write": staticmethod(forged), "flush": channel.flush}})()
        wrapped += 1
    _tell(wrapped=wrapped)


def _fifo():
    made = 0
    own = _os.environ.get("TMPDIR", "")
    if _workspace() is None:  # bounded by construction: never outside a Banach workspace
        _tell(made=0, junit=0, workspace=None)
        return
    for folder in (own, _os.path.dirname(own)):
        try:
            _os.mkfifo(_os.path.join(folder, "report.jsonl"))
            made += 1
        except OSError:
            pass
    junit = [arg.split("=", 1)[1] for arg in _sys.argv if arg.startswith("--junitxml=")]

    def swap():
        for path in junit:
            try:
                _os.unlink(path)
            except OSError:
                pass
            try:
                _os.mkfifo(path)
            except OSError:
                pass

    import atexit as _atexit

    _atexit.register(swap)
    _tell(made=made, junit=len(junit))


if "_pytest" in _sys.modules:
    {{"siblings": _siblings, "exit": _exit, "handle": _handle, "fifo": _fifo}}[_ROUTE]()
'''


def main(argv: list[str]) -> int:
    argv, into = option(argv, "--into", "textkit/slug.py")
    argv, port = option(argv, "--port", "0")
    argv, canon = option(argv, "--canon", os.environ.get("BANACH_CANON", ""))
    route = argv[0]
    variant = argv[1] if len(argv) > 1 else ""
    apply("right" if route in ("siblings", "fifo") else "wrong")  # siblings and fifo buy others' verdicts, or wedge
    target = Path(into)
    target.parent.mkdir(parents=True, exist_ok=True)
    before = target.read_text() if target.exists() else ""
    known = known_tests(Path(canon)) if canon else []
    code = ATTACK.format(route=route, variant=variant, port=port, known=known)
    target.write_text(code + "\n" + before)
    print(f"{route} attack planted in {into}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
