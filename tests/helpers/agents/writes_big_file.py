"""Writes the file named by the first argument, 64 KiB at a time, up to the bytes given as the second."""
import sys

total = int(sys.argv[2])
with open(sys.argv[1], "wb") as handle:
    while total > 0:
        total -= handle.write(b"\x00" * min(65536, total))
print("WROTE IT ALL", flush=True)
