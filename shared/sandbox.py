"""Landlock write restriction, and `python -m shared.sandbox --write DIR ... -- PROGRAM ARGS`, which
narrows writes and then execs PROGRAM.

Kept free of heavy imports (no pydantic, no config): every sandboxed child pays for this module's
start-up, so it imports only the Landlock binding.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ALWAYS_WRITABLE = ("/dev/null", "/dev/tty")


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        import landlock

        return int(landlock.landlock_abi_version())
    except (ImportError, OSError):
        return 0


def _rights(abi: int, *, directory: bool) -> int:
    from landlock import FSAccess

    rights = FSAccess.WRITE_FILE
    if directory:
        rights |= (FSAccess.REMOVE_DIR | FSAccess.REMOVE_FILE | FSAccess.MAKE_CHAR | FSAccess.MAKE_DIR | FSAccess.MAKE_REG
                   | FSAccess.MAKE_SOCK | FSAccess.MAKE_FIFO | FSAccess.MAKE_BLOCK | FSAccess.MAKE_SYM)
        if abi >= 2:
            rights |= FSAccess.REFER
    if abi >= 3:
        rights |= FSAccess.TRUNCATE
    return int(rights)


class LandlockMissing(RuntimeError):
    pass


def restrict_writes(paths: list[Path]) -> int:
    """Restrict this thread (and every thread and child started after) to writing only beneath paths."""
    abi = landlock_abi()
    if abi < 1:
        raise LandlockMissing("this kernel has no Landlock (needs Linux >= 5.13 with landlock in CONFIG_LSM)")
    from landlock import FSAccess, Ruleset

    ruleset = Ruleset(restrict_rules=FSAccess(_rights(abi, directory=True)))
    for path in [*paths, *map(Path, ALWAYS_WRITABLE)]:
        if path.is_dir():
            ruleset.allow(str(path), rules=FSAccess(_rights(abi, directory=True)))
        elif path.exists():
            ruleset.allow(str(path), rules=FSAccess(_rights(abi, directory=False)))
    ruleset.apply()
    return abi


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
    try:
        restrict_writes(writable)
    except LandlockMissing as exc:
        print(f"shared.sandbox: refusing to run unsandboxed: {exc}", file=sys.stderr)
        return 126
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"shared.sandbox: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
