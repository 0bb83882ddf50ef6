"""Class 10: does the right change, then forks until the machine gives out."""
import os

from _hostile import apply

print("applied", apply(), flush=True)
children = 0
try:
    while children < 5000:
        if os.fork() == 0:
            import time
            time.sleep(60)
            os._exit(0)
        children += 1
except OSError as exc:
    print(f"STOPPED after {children} forks: {exc.strerror}", flush=True)
print(f"forked {children}", flush=True)
