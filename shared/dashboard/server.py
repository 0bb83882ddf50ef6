"""`banach serve`: the dashboard's web server (aiohttp), pages rendered on the server from shared/dashboard/templates.

Every page is also a fragment (?fragment=1): the page's script listens to /events (server-sent events), which says
when any journal gains a row, and swaps the fragment in, so a page follows the loops without a reload. Reading is
query.py's; acting is actions.py's; who may do either is auth.py's. Everything it serves comes from the package: no
CDN, no build step, no request leaves the machine."""
from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import socket
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import jinja2
from aiohttp import web

from canon.model import STRENGTHS
from shared import lifeline
from shared.app.status import render as render_status
from shared.dashboard import actions, auth, query
from shared.errors import BanachError
from shared.workspace import Workspace

HERE = Path(__file__).parent
POLL_SECONDS = 0.2
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
WS_KEY: web.AppKey[Workspace] = web.AppKey("workspace", Workspace)
STATE: web.AppKey[State] = web.AppKey("state", object)  # type: ignore[arg-type]


class State:
    """What the server keeps between requests: the token, the templates, the last heads seen, the plot cache."""

    def __init__(self, ws: Workspace) -> None:
        self.token = auth.load_or_create_token(ws)
        self.csrf = auth.csrf_value(self.token)
        self.templates = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "templates")),
                                            autoescape=True)  # journal rows differ in their keys: a missing one reads as empty
        self.heads: dict[str, int] = {}
        self.changed = asyncio.Condition()
        self.plot: tuple[tuple[int, ...], bytes] | None = None
        self.plot_lock = threading.Lock()
        self.overview: tuple[tuple[int, ...], dict[str, Any]] | None = None  # the last status, for the plot beside it


def _provider_keys(ws: Workspace) -> list[str]:
    """Every provider key on record, so that no page can carry one even if a record held it."""
    folder = ws.keys_dir / "providers"
    found = []
    if folder.is_dir():
        for path in folder.iterdir():
            value = path.read_text(errors="replace").strip()
            if len(value) >= 8:
                found.append(value)
    return found


async def _blocking(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(None, functools.partial(function, *args, **kwargs))


@web.middleware
async def _guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    state = request.app[STATE]
    if request.path.startswith("/static/"):
        return await handler(request)
    query_token = request.query.get("token")
    bearer = request.headers.get("Authorization", "").removeprefix("Bearer ").strip() or None
    if not auth.presented(state.token, cookie=request.cookies.get(auth.COOKIE), bearer=bearer, query=query_token):
        return web.Response(status=403, text="This dashboard needs its token: open the URL banach serve printed "
                            "(banach serve --print-url prints it again).\n", content_type="text/plain")
    if query_token is not None and request.method == "GET":  # the printed URL: keep it in a cookie, not the address
        moved = web.HTTPFound(request.rel_url.with_query({k: v for k, v in request.query.items() if k != "token"}))
        moved.set_cookie(auth.COOKIE, auth.session_value(state.token), httponly=True, samesite="Strict", path="/")
        raise moved
    if request.method == "POST":
        form = await request.post()
        if form.get("csrf") != state.csrf or not auth.same_origin(request.headers.get("Origin"), request.host):
            return web.Response(status=403, text="refused: a change must come from the dashboard's own page "
                                "(its form value and origin did not match)\n", content_type="text/plain")
    response = await handler(request)
    return _scrubbed(response, _provider_keys(request.app[WS_KEY]))  # read each time: a key stored later counts too


def _scrubbed(response: web.StreamResponse, secrets: list[str]) -> web.StreamResponse:
    if isinstance(response, web.Response) and response.body is not None and secrets:
        body = bytes(response.body)  # type: ignore[arg-type]
        for secret in secrets:
            body = body.replace(secret.encode(), b"[a provider key, withheld]")
        response.body = body
    return response


def _page(request: web.Request, template: str, **context: Any) -> web.Response:
    state = request.app[STATE]
    ws = request.app[WS_KEY]
    fragment = request.query.get("fragment") == "1"
    text = state.templates.get_template(template).render(
        ws=ws, csrf=state.csrf, fragment=fragment, path=request.path, heads=state.heads, strengths=STRENGTHS,
        flash=request.query.get("said", ""), **context)
    return web.Response(text=text, content_type="text/html")


async def overview(request: web.Request) -> web.Response:
    state, ws = request.app[STATE], request.app[WS_KEY]

    def read() -> dict[str, Any]:
        key = tuple(query.heads(ws).values())  # before the read: a row landing during it makes the next key differ
        info = query.overview(ws)
        state.overview = (key, info)
        return info

    info = await _blocking(read)
    return _page(request, "overview.html.j2", info=info, status_text=render_status(info))


async def items(request: web.Request) -> web.Response:
    return _page(request, "items.html.j2", **await _blocking(query.items, request.app[WS_KEY]))


async def iterations(request: web.Request) -> web.Response:
    try:
        page = int(request.query.get("page", "1"))
    except ValueError:
        page = 1
    found = await _blocking(query.iterations, request.app[WS_KEY], page=page, search=request.query.get("q", ""))
    return _page(request, "iterations.html.j2", found=found)


async def iteration(request: web.Request) -> web.Response:
    try:
        detail = await _blocking(query.iteration, request.app[WS_KEY], int(request.match_info["n"]))
    except (BanachError, ValueError) as exc:
        raise web.HTTPNotFound(text=str(exc)) from None
    return _page(request, "iteration.html.j2", it=detail)


async def canon(request: web.Request) -> web.Response:
    return _page(request, "canon.html.j2", canon=await _blocking(query.canon, request.app[WS_KEY]),
                 edit=request.query.get("edit", ""), refused=None)


async def spend(request: web.Request) -> web.Response:
    return _page(request, "spend.html.j2", spend=await _blocking(query.spend, request.app[WS_KEY]))


async def journal(request: web.Request) -> web.Response:
    ws = request.app[WS_KEY]
    verdict = await _blocking(query.journals, ws, actions.journal_path(ws))
    return _page(request, "journal.html.j2", verdict=verdict)


async def plot(request: web.Request) -> web.Response:
    state, ws = request.app[STATE], request.app[WS_KEY]

    def render() -> bytes:
        with state.plot_lock:
            key = tuple(query.heads(ws).values())
            if state.plot is None or state.plot[0] != key:
                seen = state.overview  # the overview page asks for the plot right after its own status, same heads
                info = seen[1] if seen is not None and seen[0] == key else query.overview(ws)
                state.plot = (key, query.plot_svg(ws, info))
            return state.plot[1]

    return web.Response(body=await _blocking(render), content_type="image/svg+xml",
                        headers={"Cache-Control": "no-store"})


async def events(request: web.Request) -> web.StreamResponse:
    """Server-sent events: the journals' heads each time one gains a row."""
    state = request.app[STATE]
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
    await response.prepare(request)
    seen: dict[str, int] = {}
    while True:
        if state.heads != seen:
            seen = dict(state.heads)
            await response.write(f"data: {json.dumps(seen)}\n\n".encode())
        async with state.changed:
            try:
                await asyncio.wait_for(state.changed.wait(), timeout=15)
            except TimeoutError:
                await response.write(b": still here\n\n")


async def act(request: web.Request) -> web.StreamResponse:
    ws = request.app[WS_KEY]
    form = await request.post()
    action, target = request.match_info["action"], str(form.get("target", ""))
    runs: dict[str, Callable[[], actions.Result]] = {
        "unblock": lambda: actions.unblock(ws, target),
        "pause": lambda: actions.pause_build(ws),
        "resume": lambda: actions.resume_build(ws),
        "restart": lambda: actions.restart(ws, target),
        "plan-pass": lambda: actions.plan_pass(ws),
        "save": lambda: actions.save_document(ws, target, str(form.get("text", "")).replace("\r\n", "\n")),
    }
    if action not in runs:
        raise web.HTTPNotFound(text=f"no action {action!r}")
    result = await _blocking(runs[action])
    who = {"remote": request.remote, "user_agent": request.headers.get("User-Agent", "")[:200], "via": "dashboard"}
    await _blocking(actions.record, ws, action, target, who, result)
    if action == "save" and not result.ok:  # the editor again, holding what was typed, with the refusal above it
        refused = {"message": result.message, "text": str(form.get("text", "")).replace("\r\n", "\n")}
        return _page(request, "canon.html.j2", canon=await _blocking(query.canon, ws), edit=target, refused=refused)
    back = str(form.get("back", "/"))
    back = back if back.startswith("/") and not back.startswith("//") else "/"  # a page of this dashboard only
    context = {"action": action, "target": target, "result": result, "back": back}
    return _page(request, "acted.html.j2", **context)


async def _watch(app: web.Application) -> None:
    state, ws = app[STATE], app[WS_KEY]
    while True:
        now = await _blocking(query.heads, ws)
        if now != state.heads:
            state.heads = now
            async with state.changed:
                state.changed.notify_all()
        await asyncio.sleep(POLL_SECONDS)


async def _start_watch(app: web.Application) -> Any:
    task = asyncio.create_task(_watch(app))
    yield
    task.cancel()


def make_app(ws: Workspace) -> web.Application:
    app = web.Application(middlewares=[_guard], client_max_size=4 * 1024 * 1024)
    app[WS_KEY] = ws
    app[STATE] = State(ws)
    app.cleanup_ctx.append(_start_watch)
    app.add_routes([
        web.get("/", overview), web.get("/items", items), web.get("/iterations", iterations),
        web.get("/iterations/{n}", iteration), web.get("/canon", canon), web.get("/spend", spend),
        web.get("/journal", journal), web.get("/plot.svg", plot), web.get("/events", events),
        web.post("/act/{action}", act), web.static("/static", HERE / "static"),
    ])
    return app


def serve(ws: Workspace, host: str, port: int, echo: Callable[[str], None]) -> None:
    app = make_app(ws)
    watching = lifeline.watch(ws, lambda _cause: os.kill(os.getpid(), signal.SIGTERM))  # run_app stops on SIGTERM
    if watching:
        echo(f"banach serve: {watching}")
    sock = socket.create_server((host, port), reuse_port=False)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    echo(f"banach serve: http://{shown}:{bound}/?token={app[STATE].token}")
    echo("  (the token comes from state/keys/dashboard.key, hidden from every agent; Ctrl-C stops the server)")
    web.run_app(app, sock=sock, print=None, handle_signals=True, shutdown_timeout=2.0)  # live pages hold a stream open
