"""Who may read and steer the dashboard: whoever holds the workspace's dashboard token.

The token lives in state/keys/dashboard.token (mode 0600), in the keys folder every sandboxed child has hidden, so an
agent can neither read it nor reach the page with it. As Jupyter does, `banach serve` prints it once inside a URL;
opening that URL sets an HttpOnly, SameSite=Strict cookie and drops the token from the address bar. Requests that
change anything are POSTs carrying a CSRF value derived from the token, from a page of the same origin."""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import tempfile
from pathlib import Path

from shared.workspace import Workspace

COOKIE = "banach_dashboard"


def token_path(ws: Workspace) -> Path:
    return ws.keys_dir / "dashboard.token"


def load_or_create_token(ws: Workspace) -> str:
    path = token_path(ws)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".dashboard.")  # 0600 from the start
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(32) + "\n")
            with contextlib.suppress(FileExistsError):  # another `banach serve` made one first: use theirs
                os.link(tmp, path)
        finally:
            os.unlink(tmp)
    return path.read_text().strip()


def csrf_value(token: str) -> str:
    return hmac.new(token.encode(), b"banach dashboard csrf", hashlib.sha256).hexdigest()[:40]


def session_value(token: str) -> str:
    """What the cookie holds: derived from the token, so the cookie store never holds the token itself."""
    return hmac.new(token.encode(), b"banach dashboard session", hashlib.sha256).hexdigest()


def presented(token: str, *, cookie: str | None, bearer: str | None, query: str | None) -> bool:
    if cookie is not None and hmac.compare_digest(cookie, session_value(token)):
        return True
    return any(value is not None and hmac.compare_digest(value, token) for value in (bearer, query))


def same_origin(origin: str | None, host: str | None) -> bool:
    """A state-changing request must come from one of the dashboard's own pages (browsers send Origin on POST)."""
    if not origin or not host:
        return False
    return origin.split("://", 1)[-1].rstrip("/") == host
