"""Call a requirement's sealed cases in the code's process, and report what each returned; no expected value is here.

    BANACH_REPORT_FD=N python -I -S /path/to/shared/measurement/callrun.py --code DIR [--code DIR]... < CASES

CASES (standard input, read whole first, then /dev/null): {"cases": [{"id", "call", "args", "kwargs", "limit"}, ...]},
in an order and with ids of the measuring process's choosing. For each case it imports the callable (module.name,
or a deeper attribute), calls it with the arguments under the case's time limit, and writes one line to the report
channel: {"id", "returns": value} (the value as JSON: tuples become lists), {"id", "raises": [class names, most
derived first, with their modules]}, or {"id", "unserializable": type name}; then {"finished": count}.

Started like shared/measurement/testrun.py (whose site-packages reading, without running what they hold, it uses): by
absolute path, isolated, without the site module, non-dumpable, the code's import roots first. It imports nothing of
Banach's package: testrun.py is loaded by its path under a private name. Code under test runs here and can write
anything to the channel; it can claim outputs, and nothing it writes is compared in this process.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

_spec = importlib.util.spec_from_file_location("_banach_testrun", Path(__file__).with_name("testrun.py"))
assert _spec is not None and _spec.loader is not None
_testrun = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_testrun)


class _OutOfTime(BaseException):
    """The case's time limit passed (a BaseException, so that the code's `except Exception` does not swallow it)."""


def _out_of_time(_signum: int, _frame: object) -> None:
    raise _OutOfTime


def _callable(dotted: str) -> Any:
    """The object at module.attr[.attr...]: the longest prefix that imports, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            target: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as exc:
            if exc.name and ".".join(parts[:cut]).startswith(exc.name):
                continue
            raise
        for name in parts[cut:]:
            target = getattr(target, name)
        return target
    raise ModuleNotFoundError(f"no module in {dotted!r}")


def _names(error: BaseException) -> list[str]:
    return [f"{cls.__module__}.{cls.__qualname__}" if cls.__module__ != "builtins" else cls.__qualname__
            for cls in type(error).__mro__]


def _answer(case: dict[str, Any]) -> dict[str, Any]:
    signal.setitimer(signal.ITIMER_REAL, float(case.get("limit", 5.0)))
    try:
        value = _callable(case["call"])(*case.get("args", []), **case.get("kwargs", {}))
        signal.setitimer(signal.ITIMER_REAL, 0)
    except _OutOfTime:
        return {"timed_out": True}
    except BaseException as error:  # noqa: BLE001 - the exception is the answer
        signal.setitimer(signal.ITIMER_REAL, 0)
        if isinstance(error, KeyboardInterrupt):
            raise
        return {"raises": _names(error)}
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return {"unserializable": type(value).__name__}
    return {"returns": value}


def main(argv: list[str]) -> int:
    _testrun._not_dumpable()
    roots = [argv[i + 1] for i in range(len(argv) - 1) if argv[i] == "--code"]
    data = sys.stdin.buffer.read()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    descriptor = os.environ.pop(_testrun.REPORT_FD_ENV, "")
    if not descriptor.isdigit():
        print(f"callrun: no report channel ({_testrun.REPORT_FD_ENV} is not set); nothing can be measured", file=sys.stderr)
        return 2
    os.set_inheritable(int(descriptor), False)
    channel = os.fdopen(int(descriptor), "w", encoding="utf-8")
    cases = json.loads(data.decode("utf-8"))["cases"]
    if sys.flags.no_site:
        sys.path.extend(_testrun._site_packages())
    sys.path[:0] = roots
    signal.signal(signal.SIGALRM, _out_of_time)
    for case in cases:
        channel.write(json.dumps({"id": case["id"], **_answer(case)}) + "\n")
        channel.flush()
    channel.write(json.dumps({"finished": len(cases)}) + "\n")
    channel.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
