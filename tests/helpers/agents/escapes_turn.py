"""Leaves a process behind that no process group or environment tag can find.

The grandchild calls setsid() and re-execs itself with an empty environment (so it carries no reap
tag), writes its pid to the file named by the first argument, tells its grandparent over a pipe, and
waits for ever. The grandparent prints LEFT ONE BEHIND and exits only once the grandchild is settled.
"""
import os
import signal
import sys

if sys.argv[1] == "--stay":
    with open(sys.argv[2] + ".tmp", "w") as handle:
        handle.write(str(os.getpid()))
    os.replace(sys.argv[2] + ".tmp", sys.argv[2])
    os.write(int(sys.argv[3]), b"settled")
    os.close(int(sys.argv[3]))
    while True:
        signal.pause()

ready, settled = os.pipe()
if os.fork() == 0:
    os.close(ready)
    os.setsid()
    if os.fork() == 0:
        os.set_inheritable(settled, True)
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), "--stay", sys.argv[1], str(settled)], {})
    os._exit(0)
os.close(settled)
os.wait()
assert os.read(ready, 16) == b"settled"
print("LEFT ONE BEHIND", flush=True)
