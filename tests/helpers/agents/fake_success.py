"""A plausible but wrong change, with a confident claim of success."""
from _lib import apply_useless

apply_useless()
print("SUCCESS: the task is complete and all tests pass.")
