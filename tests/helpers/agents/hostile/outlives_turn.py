"""Class 7: does the right change and leaves a process that escapes every marker a reaper could look for:
a new session, a double fork, and a re-exec with an empty environment. It keeps writing a heartbeat file."""
import os
import sys

from _hostile import WORKSPACE, apply

print("applied", apply())
heartbeat = str(WORKSPACE / "state" / "build" / "tmp" / "heartbeat")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        code = ("import os, time\nwhile True:\n    open(%r, 'w').write(str(os.getpid()))\n    time.sleep(0.2)\n" % heartbeat)
        os.execve(sys.executable, [sys.executable, "-c", code], {})
    os._exit(0)
print("left a daemon behind")
