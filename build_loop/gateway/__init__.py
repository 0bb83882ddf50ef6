"""Banach's model gateway: the agent's CLI talks to it with a token valid for one turn; it talks to the provider
with the real key, records every call (tokens, cost, bodies), enforces the budgets and ends the turn on a rate
limit. See server.py for the flow, wires.py for what it knows of each API, docs/gateway.md for the user's view."""
from __future__ import annotations

from typing import TYPE_CHECKING

from shared.workspace import Workspace

if TYPE_CHECKING:
    from build_loop.gateway.server import Gateway


def uses_gateway(ws: Workspace) -> bool:
    return any(ws.config.agents[rung].provider for rung in ws.config.build.rungs if rung in ws.config.agents)


def gateway_for(ws: Workspace) -> Gateway | None:
    """The gateway of build-loop for this workspace, started, when a ladder rung talks to a provider through it.
    Called before build restricts itself: it reads the provider keys (and takes them out of the environment) and
    binds its sockets."""
    if not uses_gateway(ws):
        return None
    from build_loop.gateway.keys import load_keys
    from build_loop.gateway.server import Gateway  # aiohttp: only for a build that talks to a provider
    from shared.bodies import BodyStore

    keys = load_keys(ws)
    build = ws.role_dir("build")
    build.mkdir(parents=True, exist_ok=True)
    return Gateway(ws.config.gateway, keys, BodyStore(build / "bodies"), socket_path=build / "gateway.sock").start()
