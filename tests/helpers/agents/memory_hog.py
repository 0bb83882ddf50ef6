"""Takes memory 8 MiB at a time, touching every page, for ever (or up to the MiB given as argument)."""
import sys

limit = int(sys.argv[1]) if len(sys.argv) > 1 else None
chunks = []
while limit is None or len(chunks) * 8 < limit:
    chunks.append(b"\x01" * (8 * 2**20))
print(f"HELD {len(chunks) * 8} MiB", flush=True)
