"""Hits a usage limit that resets in one second, as a CLI reports it."""
import sys

print("You've hit your usage limit. Please try again in 1 seconds.", file=sys.stderr)
sys.exit(1)
