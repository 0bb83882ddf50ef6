"""Who may read and steer the dashboard: whoever holds the workspace's dashboard token.

The token comes from state/keys/dashboard.key (mode 0600), in the keys folder every sandboxed child has hidden, so an
agent can neither read it nor reach the page with it. As Jupyter does, `banach serve` prints it once inside a URL;
opening that URL sets an HttpOnly, SameSite=Strict cookie and drops the token from the address bar. Requests that
change anything are POSTs carrying a CSRF value derived from the token, from a page of the same origin."""
from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

from shared.journal import load_or_create_key
from shared.workspace import Workspace

COOKIE = "banach_dashboard"


def token_path(ws: Workspace) -> Path:
    return ws.keys_dir / "dashboard.key"


def load_or_create_token(ws: Workspace) -> str:
    """The token, from the workspace's dashboard key (made once, 0600, as every key of the workspace is)."""
    return load_or_create_key(token_path(ws)).hex()


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
