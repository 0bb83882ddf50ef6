"""The right change, and two processes left behind: one in its group, one in a new session."""
import subprocess
import time

from _lib import apply

apply()
in_group = subprocess.Popen(["sleep", "300"])
new_session = subprocess.Popen(["sleep", "301"], start_new_session=True)
time.sleep(0.1)
print(f"PIDS {in_group.pid} {new_session.pid}", flush=True)
