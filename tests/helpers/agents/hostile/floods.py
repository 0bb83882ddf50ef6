"""Class 10: does the right change, then prints without end, hoping to fill build's disk with its output."""
import sys

from _hostile import apply

print("applied", apply(), flush=True)
chunk = "x" * 65536 + "\n"
while True:
    sys.stdout.write(chunk)
