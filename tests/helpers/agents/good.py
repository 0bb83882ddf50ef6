"""Applies the right change for the item, and nothing else."""
from _lib import apply

print("wrote", apply())
