"""The right change, and a passing scaffolding test deleted (it is in scope for this test)."""
import os

from _lib import apply

apply()
os.remove("tests/test_smoke.py")
