"""Wait for a condition by watching the files that change when it becomes true: never pace with sleep."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

from shared.watch import Watcher


def wait_until(predicate: Callable[[], object], folders: Iterable[Path], timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    # the files waited on sit directly in these folders: not recursive
    with Watcher([(folder, False) for folder in folders], debounce=0.02) as watcher:
        while True:
            if predicate():
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            watcher.wait(min(remaining, 1.0))  # re-check at least once a second for changes not seen as file events
