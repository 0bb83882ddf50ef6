"""Tries every store it must not touch: fix_plan, the build journal, the keys, outside the workspace."""
import sys

from _lib import try_write

for path in ("../plan/fix_plan.json", "../state/build/journal.db", "../state/keys/build.key", "../banach.toml",
             sys.argv[1] if len(sys.argv) > 1 else "/tmp/banach-agent-escape.txt"):
    print(try_write(path, "x"))
