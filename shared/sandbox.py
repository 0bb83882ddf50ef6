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


def _read_rules(hidden: list[Path]) -> list[tuple[Path, bool]]:
    """Paths to grant reading so that everything is readable except beneath `hidden`.

    Landlock only allows, so for each folder on the way to a hidden path we grant listing the folder
    itself, and reading every entry beside the one that leads to the hidden path. Returns (path, whole):
    whole means reading files and folders beneath it, otherwise listing that folder only.
    """
    hidden = [h.resolve() for h in hidden]
    on_the_way = {ancestor for h in hidden for ancestor in h.parents}
    rules: list[tuple[Path, bool]] = []
    for folder in sorted(on_the_way):
        rules.append((folder, False))
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            resolved = entry.resolve() if entry.is_symlink() else entry
            if resolved in on_the_way or resolved in hidden or entry in on_the_way or entry in hidden:
                continue
            rules.append((entry, True))
    return rules


def restrict_writes(paths: list[Path], hidden: list[Path] = ()) -> int:  # type: ignore[assignment]
    """Restrict this thread (and every thread and child started after) to writing only beneath paths,
    and, when hidden is given, to reading everything except beneath those paths."""
    abi = landlock_abi()
    if abi < 1:
        raise LandlockMissing("this kernel has no Landlock (needs Linux >= 5.13 with landlock in CONFIG_LSM)")
    from landlock import FSAccess, Ruleset

    read_dir, read_file = int(FSAccess.READ_DIR), int(FSAccess.READ_FILE)
    handled = _rights(abi, directory=True) | ((read_dir | read_file) if hidden else 0)
    ruleset = Ruleset(restrict_rules=FSAccess(handled))
    for path in [*paths, *map(Path, ALWAYS_WRITABLE)]:
        reads = (read_dir | read_file) if hidden and path.is_dir() else (read_file if hidden else 0)
        if path.is_dir():
            ruleset.allow(str(path), rules=FSAccess(_rights(abi, directory=True) | reads))
        elif path.exists():
            ruleset.allow(str(path), rules=FSAccess(_rights(abi, directory=False) | reads))
    for path, whole in _read_rules(list(hidden)):
        try:
            if not whole:
                ruleset.allow(str(path), rules=FSAccess(read_dir))
            elif path.is_dir():
                ruleset.allow(str(path), rules=FSAccess(read_dir | read_file))
            else:
                ruleset.allow(str(path), rules=FSAccess(read_file))
        except OSError:
            continue  # vanished, or a socket we cannot open: it stays unreadable, which is safe
    ruleset.apply()
    return abi


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: python -m shared.sandbox --write DIR ... -- PROGRAM [ARGS]", file=sys.stderr)
        return 2
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    writable = [Path(options[i + 1]) for i, flag in enumerate(options) if flag == "--write" and i + 1 < len(options)]
    hidden = [Path(options[i + 1]) for i, flag in enumerate(options) if flag == "--hide" and i + 1 < len(options)]
    if not command:
        print("shared.sandbox: no program given after '--'", file=sys.stderr)
        return 2
    try:
        restrict_writes(writable, hidden)
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
