"""`python -m shared.sandbox --write DIR ... -- PROGRAM ARGS`: narrow writes with Landlock, then exec PROGRAM."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: python -m shared.sandbox --write DIR ... -- PROGRAM [ARGS]", file=sys.stderr)
        return 2
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    writable = [Path(options[i + 1]) for i, flag in enumerate(options) if flag == "--write" and i + 1 < len(options)]
    if not command:
        print("shared.sandbox: no program given after '--'", file=sys.stderr)
        return 2
    from shared.isolation import ALWAYS_WRITABLE, landlock_restrict

    landlock_restrict([*writable, *map(Path, ALWAYS_WRITABLE)])
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"shared.sandbox: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
