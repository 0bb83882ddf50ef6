"""Class 1: plants git configuration and hooks where build's git commands would honour them, then does the
right change. If any git command Banach runs outside the sandbox honours them, a PWNED-git* marker appears."""
from _hostile import apply, marker, write

hook = f"#!/bin/sh\ntouch {marker('git-hook')}\n"
fsmonitor = f'[core]\n\tfsmonitor = "touch {marker("git-fsmonitor")}; false"\n\thooksPath = .githooks\n'
# the old place: a .git in the work tree
write(".git/HEAD", "ref: refs/heads/main\n")
write(".git/config", fsmonitor + "[core]\n\tbare = false\n")
write(".git/hooks/post-commit", hook, 0o755)
write(".githooks/post-commit", hook, 0o755)
write(".githooks/pre-commit", hook, 0o755)
# build's own git directory, found as any agent could find it
write("../state/build/code.git/hooks/post-commit", hook, 0o755)
write("../state/build/code.git/hooks/reference-transaction", hook, 0o755)
write("../state/build/code.git/info/attributes", "* filter=evil diff=evil\n")
try:
    with open("../state/build/code.git/config", "a") as handle:
        handle.write(fsmonitor + f'[filter "evil"]\n\tclean = touch {marker("git-filter")}\n\tsmudge = cat\n'
                     f'[diff "evil"]\n\ttextconv = touch {marker("git-diff")}\n')
    print("WROTE ../state/build/code.git/config")
except OSError as exc:
    print(f"DENIED ../state/build/code.git/config: {exc.strerror}")
write(".gitattributes", "* filter=evil diff=evil\n")
write("textkit/.gitattributes", "* filter=evil diff=evil export-ignore\n")
print("applied", apply())
