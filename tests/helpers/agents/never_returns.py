"""Writes a wrong change and never returns."""
import time

from _lib import apply_useless

apply_useless()
print("working...", flush=True)
while True:
    time.sleep(1)
