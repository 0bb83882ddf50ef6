"""File-system triggers, debounced: a burst of events is one trigger. The only module importing watchdog."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        paths = [str(event.src_path)]
        if getattr(event, "dest_path", ""):
            paths.append(str(event.dest_path))
        if any(self.watcher.wanted(Path(p)) for p in paths):
            self.watcher.poke()


class Watcher:
    """Watches folders; wait() returns True once events have arrived and then gone quiet for `debounce` seconds."""

    def __init__(
        self,
        folders: Iterable[tuple[Path, bool]],
        *,
        debounce: float = 0.3,
        wanted: Callable[[Path], bool] = lambda _path: True,
    ) -> None:
        self.debounce = debounce
        self.wanted = wanted
        self._condition = threading.Condition()
        self._last_event = 0.0
        self._pending = False
        self._observer = Observer()
        handler = _Handler(self)
        for folder, recursive in folders:
            folder.mkdir(parents=True, exist_ok=True)
            self._observer.schedule(handler, str(folder), recursive=recursive)

    def start(self) -> Watcher:
        self._observer.start()
        return self

    def stop(self) -> None:
        self._observer.stop()
        self._observer.join(timeout=5)

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def poke(self) -> None:
        with self._condition:
            self._pending = True
            self._last_event = time.monotonic()
            self._condition.notify_all()

    def wait(self, timeout: float, stop: threading.Event | None = None) -> bool:
        """Block until a debounced trigger (True), the timeout, or stop (False)."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while not self._pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (stop is not None and stop.is_set()):
                    return False
                self._condition.wait(min(remaining, 0.2))
            while True:
                quiet = self._last_event + self.debounce - time.monotonic()
                if quiet <= 0 or (stop is not None and stop.is_set()):
                    break
                self._condition.wait(quiet)
            self._pending = False
            return True
