"""A Go conformance test file, built into a test binary with the code and run under go's test2json, one file a run.

    run = prepare(canon_dir, code_dir, "tests/slug_test.go", nodes, folder, go_modules=...)
    outcome = process.run(run.request(env=..., timeout=..., limits=..., confine=...))
    verdict = run.judge(outcome)

Canon's Go tests are black-box tests: each file is a package of its own (any name) that imports the module's
packages by their import paths. The run puts the file, with the run's names and its canaries
(shared/measurement/suite_canaries.py), into a fresh folder of the module by go's `-overlay` (the code's tree is
not touched), and `go test -c` builds the test binary in the run's own folder, with the modules `go mod download`
fetched for the project (shared/environment/) and no network (GOPROXY=off, -mod=readonly, no workspace file). The
build reads the code as data; only the binary runs it. go's test2json runs the binary and writes the report channel
(shared/measurement/suiterun.py hands it the channel as its standard output alone); its events are read here into
conformance's lines: a top-level test's pass, fail or skip, and the package's own result as the finish line. What
code under test can still do from the binary: print test2json's `--- PASS: Name` lines for its own file's tests, or
open test2json's descriptors through /proc (same user, same view) and write the channel; an early exit
(syscall.Exit) leaves no package result and measures nothing; the canaries and the run names catch a blanket
forgery (SECURITY.md).
"""
from __future__ import annotations

import json
import secrets
import shutil
import subprocess
from functools import cache
from pathlib import Path

from shared.export import remove_tree
from shared.measurement.filerun import FileRun, driver, expected_of
from shared.measurement.suite_canaries import prepare as plant
from shared.measurement.suites import test_names

EVENT_KEYS = {"Time", "Action", "Package", "Test", "Elapsed", "Output"}
ACTIONS = {"start", "run", "pause", "cont", "pass", "fail", "skip", "output", "bench"}
NOT_AN_EVENT = json.dumps("a line test2json does not write")  # a line conformance's judge refuses: the run is void


def go() -> str:
    return shutil.which("go") or "go"


@cache
def tool_dir() -> str:
    """Where go keeps test2json (`go env GOTOOLDIR`)."""
    found = subprocess.run([go(), "env", "GOTOOLDIR"], capture_output=True, text=True, check=False, timeout=60)
    return found.stdout.strip()


def environment(scratch: Path, go_modules: Path | None) -> dict[str, str]:
    """go's settings for a build and run that reach no network and read no configuration of the code's."""
    return {"GOCACHE": str(scratch / "gocache"), "GOPATH": str(scratch / "gopath"),
            "GOMODCACHE": str(go_modules or scratch / "gomod"), "GOFLAGS": "-mod=readonly", "GOPROXY": "off",
            "GOSUMDB": "off", "GOWORK": "off", "GOENV": "off", "GOTOOLCHAIN": "local", "GOTELEMETRY": "off",
            "GONOSUMCHECK": "", "GOINSECURE": "", "GOPRIVATE": "", "GONOPROXY": "", "GONOSUMDB": ""}


def read(report: str, file: str) -> tuple[str, str]:
    """test2json's events (after the driver's first line) as conformance's report lines, and the tests' output."""
    lines: list[str] = []
    shown: list[str] = []
    for number, line in enumerate(report.splitlines()):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            lines.append(NOT_AN_EVENT)
            continue
        if number == 0 or (isinstance(event, dict) and set(event) in ({"collect_error"}, {"finished"})):
            if event != {"built": True}:
                lines.append(line)  # the driver's own: a build that failed, and its finish
            continue
        if not isinstance(event, dict) or not set(event) <= EVENT_KEYS or event.get("Action") not in ACTIONS:
            lines.append(NOT_AN_EVENT)
            continue
        action, test = event["Action"], event.get("Test")
        if action == "output":
            shown.append(str(event.get("Output", "")).rstrip("\n"))
        elif action in ("pass", "fail", "skip") and test is None:
            lines.append(json.dumps({"finished": 0 if action == "pass" else 1}))
        elif action in ("pass", "fail", "skip") and isinstance(test, str) and "/" not in test:
            outcome = {"pass": "passed", "fail": "failed", "skip": "skipped"}[action]
            lines.append(json.dumps({"test": f"{file}::{test}", "when": "call", "outcome": outcome}))
    return "\n".join(lines), "\n".join(shown)


def prepare(canon_dir: Path, code_dir: Path, file: str, nodes: tuple[str, ...], folder: Path, *,
            go_modules: Path | None = None, taken: set[str] | None = None) -> FileRun:
    """folder: the run's own, made new. go_modules: the project's module cache (GOMODCACHE), or None."""
    remove_tree(folder)
    scratch = folder / "tmp"
    scratch.mkdir(parents=True)
    suite_dir = folder / "suite"
    suite_dir.mkdir()
    source = (canon_dir / file).read_text(encoding="utf-8", errors="replace")
    suite = plant(source, file, "go", taken if taken is not None else set())
    name = Path(file).name
    (suite_dir / name).write_text(suite.source, encoding="utf-8")
    package = f"banachcanon{secrets.token_hex(4)}"
    (suite_dir / "overlay.json").write_text(json.dumps({"Replace": {str(code_dir / package / name): str(suite_dir / name)}}))
    for path in (suite_dir / name, suite_dir / "overlay.json", suite_dir):
        path.chmod(0o555 if path.is_dir() else 0o444)
    binary = scratch / "suite.test"
    build = (go(), "test", "-c", "-vet=off", "-buildvcs=false", "-overlay", str(suite_dir / "overlay.json"),
             "-o", str(binary), f"./{package}/")
    command = (str(Path(tool_dir()) / "test2json"), "-p", package, str(binary), "-test.v", "-test.paniconexit0",
               "-test.count=1")
    readable = (suite_dir, *((go_modules,) if go_modules is not None else ()))
    return FileRun("go", file, folder, driver(code_dir, file, command, build), code_dir,
                   environment(scratch, go_modules), readable, expected_of(file, test_names(source, file), nodes),
                   suite.planted, suite.names, lambda report: read(report, file), (),
                   ((f"{package}/", "tests/"), (str(suite_dir) + "/", "")))
