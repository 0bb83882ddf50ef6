"""The right change, committed by the agent itself (only the governor may commit)."""
from _lib import apply, git

apply()
git("add", "-A")
print(git("commit", "-qm", "agent commits on its own").returncode)
