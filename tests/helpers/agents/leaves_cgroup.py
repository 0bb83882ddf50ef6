"""Tries to move itself out of its cgroup by writing its pid to each cgroup.procs given as argument.

Prints MOVED or DENIED per file, then its own /proc/self/cgroup.
"""
import os
import sys

for target in sys.argv[1:]:
    try:
        with open(target, "w") as handle:
            handle.write(str(os.getpid()))
        print(f"MOVED {target}", flush=True)
    except OSError as exc:
        print(f"DENIED {target} {exc.strerror}", flush=True)
with open("/proc/self/cgroup") as handle:
    print(handle.read(), flush=True)
