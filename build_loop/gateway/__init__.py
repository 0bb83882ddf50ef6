"""Banach's model gateway: the agent's CLI talks to it with a token valid for one turn; it talks to the provider
with the real key, records every call (tokens, cost, bodies), enforces the budgets and ends the turn on a rate
limit. See server.py for the flow, wires.py for what it knows of each API, docs/gateway.md for the user's view."""
