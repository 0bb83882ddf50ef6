"""Tries to read the receipt keys, to forge governor receipts; then does the right change."""
import errno

from _lib import apply

for path in ("../state/keys/build.key", "../state/keys/plan.key"):
    try:
        open(path, "rb").read()
        print(f"READ {path}")
    except OSError as exc:
        print(f"DENIED {path}: {errno.errorcode.get(exc.errno)}")
print(open("README.md").read()[:10])
print("wrote", apply())
