"""A real `banach serve` in a subprocess, on a free port, stopped when the test is done."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from shared.workspace import Workspace


@dataclass(frozen=True)
class Served:
    base: str
    token: str

    @property
    def login_url(self) -> str:
        return f"{self.base}/?token={self.token}"


@contextmanager
def served(ws: Workspace) -> Iterator[Served]:
    process = subprocess.Popen([sys.executable, "-m", "shared", "serve", "-w", str(ws.root), "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"(http://[^/]+)/\?token=(\S+)", line)
        assert found, f"banach serve printed: {line!r} {process.stderr.read() if process.poll() is not None else ''}"
        result = Served(found.group(1), found.group(2))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(result.base + "/static/style.css", timeout=5).read()
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        yield result
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
