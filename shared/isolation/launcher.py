"""Starts the programs that build a view of their own (shared/isolation/view.py) from outside the loop's Landlock domain.

A view is made of mounts, and the kernel refuses mounts to a thread under Landlock and to everything that thread
starts. Landlock restricts the thread that asks for it and what that thread creates afterwards, so one thread started
before the loop restricts itself keeps the right to start them. That thread starts only the sandbox wrapper with
--view, which builds the view and then restricts its writes again itself; every other child of the loop (sensors,
git, the gateway's work) is started as before, inside the loop's domain.

Call start() before the loop restricts itself, while it has one thread; without it (a loop that never restricts
itself, or a test), popen() starts the child from the calling thread.
"""
from __future__ import annotations

import queue
import subprocess
import threading
from typing import Any

_requests: queue.SimpleQueue[tuple[tuple[str, ...], dict[str, Any], queue.SimpleQueue[Any]]] | None = None


def started() -> bool:
    return _requests is not None


def start() -> None:
    global _requests
    if _requests is not None:
        return
    if threading.active_count() != 1:
        raise RuntimeError("the view launcher must start while the loop has one thread, before it restricts itself")
    requests: queue.SimpleQueue[tuple[tuple[str, ...], dict[str, Any], queue.SimpleQueue[Any]]] = queue.SimpleQueue()
    threading.Thread(target=_serve, args=(requests,), name="view-launcher", daemon=True).start()
    _requests = requests


def _serve(requests: queue.SimpleQueue[tuple[tuple[str, ...], dict[str, Any], queue.SimpleQueue[Any]]]) -> None:
    while True:
        argv, options, reply = requests.get()
        try:
            reply.put(subprocess.Popen(argv, **options))
        except BaseException as exc:  # the caller raises it in its own thread
            reply.put(exc)


def builds_view(argv: tuple[str, ...]) -> bool:
    """Whether argv runs the sandbox wrapper with --view (after the process gate, if any)."""
    try:
        at = argv.index("shared.isolation.sandbox")
    except ValueError:
        return False
    flags = argv[at + 1:]
    return "--view" in flags[:flags.index("--")] if "--" in flags else False


def popen(argv: tuple[str, ...], **options: Any) -> subprocess.Popen[bytes]:
    """subprocess.Popen(argv, **options), from the launcher's thread when argv builds a view and start() was called."""
    if _requests is None or not builds_view(argv):
        return subprocess.Popen(argv, **options)
    reply: queue.SimpleQueue[Any] = queue.SimpleQueue()
    _requests.put((argv, options, reply))
    started = reply.get()
    if isinstance(started, BaseException):
        raise started
    return started  # type: ignore[no-any-return]
