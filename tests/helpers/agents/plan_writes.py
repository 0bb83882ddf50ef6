"""A plan agent that tries to write code, canon and outside, then answers with what happened (as prose: rejected)."""
import errno
import os
import sys

code = os.environ.get("BANACH_PLAN_CODE", "")
results = []
workspace = os.path.abspath(os.path.join(os.getcwd(), "..", "..", "..", "..", ".."))
for rel in ("code/textkit/evil.py", "canon/requirements/evil.md"):
    try:
        with open(os.path.join(workspace, rel), "w") as handle:
            handle.write("x")
        results.append(f"WROTE {rel}")
    except OSError as exc:
        results.append(f"DENIED {rel}: {errno.errorcode.get(exc.errno)}")
target = sys.argv[1]
try:
    with open(target, "w") as handle:
        handle.write("x")
    results.append(f"WROTE {target}")
except OSError as exc:
    results.append(f"DENIED {target}: {errno.errorcode.get(exc.errno)}")
print(" ; ".join(results))
