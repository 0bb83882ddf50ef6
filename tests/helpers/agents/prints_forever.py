"""Prints for ever, to stdout and stderr, as fast as it can."""
import sys

line = "x" * 8191 + "\n"
while True:
    sys.stdout.write(line)
    sys.stderr.write(line)
