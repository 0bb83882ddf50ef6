"""Run canon's conformance tests and report each test's outcome outside the exit code.

    python -I /path/to/shared/testrun.py --report FILE --code DIR -- PYTEST_ARGS...

Started by absolute path in isolated mode (-I): neither the working directory, nor PYTHONPATH, nor this
file's folder is on sys.path, so nothing in the work tree can stand in for pytest or for this runner. The
report file is opened before pytest is imported and before any code under test is, and a line is written
and flushed as each test ends, so an early exit (os._exit(0) from the code) cannot turn a failure into a
pass: a test with no line is a test that did not pass. Only then is the code put first on sys.path, so the
project's own modules (even ones named `shared`, `canon` or `pytest`) are what its tests import.

This file imports nothing from Banach: in this process Banach's packages must neither shadow the
project's nor be shadowed by them.
"""
from __future__ import annotations

import json
import sys
from typing import IO, Any


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


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: python -I testrun.py --report FILE --code DIR -- PYTEST_ARGS", file=sys.stderr)
        return 2
    split = argv.index("--")
    options, pytest_args = argv[:split], argv[split + 1:]
    values = {options[i]: options[i + 1] for i in range(0, len(options) - 1, 2)}
    channel = open(values["--report"], "a", encoding="utf-8")  # noqa: SIM115 - held open for the whole run
    import pytest  # before the code is on sys.path: a project's pytest.py cannot stand in for it

    code = values.get("--code")
    if code:
        sys.path.insert(0, code)
    return int(pytest.main(pytest_args, plugins=[Reporter(channel)]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
