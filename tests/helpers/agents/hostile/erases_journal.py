"""Class 9: erases build's record the way a compromised build loop could, holding build's key.

usage: erases_journal.py WORKSPACE delete|truncate|replace

  delete    removes state/build/journal.db
  truncate  cuts the last two rows and appends one forged row, hashed and signed with build.key, so that
            the chain and every receipt verify
  replace   swaps in a fresh journal of six rows, signed with build.key
"""
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from shared.journal import Journal  # noqa: E402

workspace, mode = Path(sys.argv[1]), sys.argv[2]
path = workspace / "state" / "build" / "journal.db"
key = (workspace / "state" / "keys" / "build.key").read_bytes()

if mode == "delete":
    path.unlink()
elif mode == "truncate":
    with sqlite3.connect(path) as db:
        last = db.execute("SELECT MAX(seq) FROM rows").fetchone()[0]
        db.execute("DELETE FROM rows WHERE seq > ?", [last - 2])
    with Journal(path, key=key) as journal:
        journal.append("iteration.ended", {"n": 1, "decision": "rollback", "reason": "nothing happened here"})
elif mode == "replace":
    path.unlink()
    with Journal(path, key=key) as journal:
        for n in range(6):
            journal.append("loop.started" if n == 0 else "idle", {"n": n})
else:
    sys.exit(f"unknown mode {mode}")
print(f"{mode}: done")
