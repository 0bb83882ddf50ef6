"""Class 7: does the right change and leaves a process that escapes every marker a reaper could look for:
a new session, a double fork, and a re-exec with an empty environment. It names its pid in the turn's output
and in daemon.pid in the work tree, with a marker in its command line (in a turn's own PID namespace its pid is not the
host's: the test finds it by the marker), and (with HANG in its argv) then waits forever itself."""
import os
import secrets
import sys
import time
from pathlib import Path

from _hostile import apply

print("applied", apply(), flush=True)
marker = f"banach-daemon-{secrets.token_hex(6)}"
read, write = os.pipe()
if os.fork() == 0:
    os.setsid()
    pid = os.fork()
    if pid == 0:
        os.execve(sys.executable, [sys.executable, "-c", "import time\nwhile True:\n    time.sleep(0.2)\n", marker], {})
    os.write(write, str(pid).encode())
    os._exit(0)
daemon = int(os.read(read, 32))
Path("daemon.pid").write_text(f"{daemon} {marker}")
print(f"DAEMON {daemon} {marker}", flush=True)
if "HANG" in sys.argv:
    while True:
        time.sleep(1)
