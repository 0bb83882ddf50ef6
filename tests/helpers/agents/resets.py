"""Moves HEAD back one commit, throwing away the last kept change."""
from _lib import git

print(git("reset", "-q", "--hard", "HEAD~1").returncode)
