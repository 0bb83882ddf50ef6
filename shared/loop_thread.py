"""An asyncio event loop in a daemon thread, for a server that lives inside a synchronous program (build-loop's model
gateway; the tests' scripted model server): start it with the coroutine that sets the server up, run coroutines on it
from any thread, stop it with the one that tears the server down."""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    def __init__(self, name: str) -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self, setup: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        """Start the loop and run `setup` on it; returns what it returns."""
        if self._thread is not None:
            setup.close()
            raise RuntimeError(f"{self.name} is already running")
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=self._run, args=(loop,), name=self.name, daemon=True)
        self._thread.start()
        return self.call(setup, timeout)

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        assert self._loop is not None, f"{self.name} is not running"
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=timeout)

    def stop(self, teardown: Coroutine[Any, Any, Any] | None = None, timeout: float = 30) -> None:
        """Run `teardown` on the loop, then end the loop and its thread. Stopping a stopped loop does nothing."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            if teardown is not None:
                teardown.close()
            return
        if teardown is not None:
            self.call(teardown, timeout)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=timeout)
        self._loop = self._thread = None

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.close()
