"""Prints its environment, so the test can see what reached it."""
import os

for key in sorted(os.environ):
    print(f"ENV {key}={os.environ[key]}")
