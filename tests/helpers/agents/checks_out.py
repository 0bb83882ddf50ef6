"""Makes a branch and switches to it, then edits: the checkpoint's HEAD must come back."""
from _lib import apply, git

git("checkout", "-q", "-b", "agent-branch")
apply()
git("stash", "-q")
git("stash", "apply", "-q")
