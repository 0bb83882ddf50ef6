"""Hits a usage limit, as a CLI reports it."""
import sys

print("Claude AI usage limit reached|4102444800", file=sys.stderr)
sys.exit(1)
