"""Class 10: does the right change, then writes a file far over the size limit inside its own scope."""
from _hostile import apply

print("applied", apply(), flush=True)
with open("textkit/slug_data.bin", "wb") as handle:
    for _ in range(64):
        handle.write(b"x" * 2**20)
print("wrote 64 MiB", flush=True)
