"""Run one conformance test file of another language, its reporter writing to the run's report channel.

    BANACH_REPORT_FD=N python -I -S /path/to/shared/measurement/suiterun.py --cwd DIR [--build ARGV_JSON] \
        -- REPORTER_ARGV...

Started like shared/measurement/testrun.py: by absolute path, isolated, without the site module, non-dumpable; it
imports nothing of Banach's. With --build (go: `go test -c`, which compiles canon's test file with the code into a
test binary) it runs that first, its output on this process's standard error; then it writes one line to the
channel, {"built": true}, or {"collect_error": FILE} and {"finished": 2} when the build failed (nothing of the code
ran: the compiler reads it as data). Then it starts the reporter (node's test runner with Banach's reporter, or go's
test2json running the test binary) with the channel as its standard output and nothing else of this process's
descriptors; the tests run in a child of that reporter, whose own standard output is a pipe to the reporter. This
process exits with the reporter's exit code, which decides nothing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

REPORT_FD_ENV = "BANACH_REPORT_FD"
PR_SET_DUMPABLE = 4


def _not_dumpable() -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: BANACH_REPORT_FD=N python -I -S suiterun.py --cwd DIR [--file FILE] [--build ARGV_JSON] -- "
              "REPORTER_ARGV...", file=sys.stderr)
        return 2
    _not_dumpable()
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1:]
    named = {options[i]: options[i + 1] for i in range(0, len(options) - 1, 2)}
    descriptor = os.environ.pop(REPORT_FD_ENV, "")
    if not descriptor.isdigit():
        print(f"suiterun: no report channel ({REPORT_FD_ENV} is not set); nothing can be measured", file=sys.stderr)
        return 2
    channel = int(descriptor)
    os.set_inheritable(channel, False)
    cwd = named.get("--cwd", os.getcwd())
    if "--build" in named:
        built = subprocess.run(json.loads(named["--build"]), cwd=cwd, stdin=subprocess.DEVNULL, stdout=sys.stderr,
                               stderr=sys.stderr, check=False)
        if built.returncode != 0:
            os.write(channel, (json.dumps({"collect_error": named.get("--file", "")}) + "\n"
                               + json.dumps({"finished": 2}) + "\n").encode())
            return 2
        os.write(channel, (json.dumps({"built": True}) + "\n").encode())
    ran = subprocess.run(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=channel, stderr=sys.stderr, check=False)
    return ran.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
