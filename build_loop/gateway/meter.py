"""What the gateway holds for the whole run, across every turn in flight, wherever it runs (a lane here, a cluster node):
the run's token and cost budgets, and each provider's rate limit.

A turn's own Allowance (lease.py) is the tightest of its budgets when it starts; with several turns in flight each
would otherwise take the whole of what the run has left. The meter counts every call of every lease as it is recorded
and answers, before each model call, whether the run may still spend:

    meter = RunMeter(max_tokens, max_cost, spent=(tokens, cost))   # spent: what the run had spent before the gateway
    meter.refusal(provider)   # "" or why no model call may go upstream now (the run's budget, the provider's limit)
    meter.add(call)           # after each call is recorded
    meter.limit(provider, resets_at)   # a 429/529 seen by one turn: every turn's calls to that provider wait for it

A provider's limit holds for its key, not for one turn: once one turn is answered 429, a call of any other turn to
that provider before the reset is refused at the gateway (the turn ends rate_limited with the same reset), instead of
each node asking again and being answered 429 in turn.
"""
from __future__ import annotations

import threading
import time

from build_loop.gateway.lease import Call

UNKNOWN_RESET = 60.0  # seconds a provider is held when its 429 said no reset time


class RunMeter:
    def __init__(self, max_tokens: int = 0, max_cost: float = 0.0, *, spent: tuple[int, float] = (0, 0.0)) -> None:
        self.max_tokens, self.max_cost = max_tokens, max_cost
        self.tokens, self.cost = spent
        self._limited: dict[str, float] = {}  # provider -> epoch seconds its limit resets
        self._lock = threading.Lock()

    def add(self, call: Call) -> None:
        with self._lock:
            self.tokens += call.input_tokens + call.output_tokens + call.cache_read_tokens + call.cache_write_tokens
            self.cost += call.cost_usd or 0.0

    def spent(self) -> str:
        """Why the run may not spend more, or ""."""
        with self._lock:
            if self.max_tokens and self.tokens >= self.max_tokens:
                return (f"the run token budget is spent ({self.tokens} of {self.max_tokens} tokens across every turn "
                        "in flight)")
            if self.max_cost and self.cost >= self.max_cost:
                return (f"the run cost budget is spent (${self.cost:.4f} of ${self.max_cost:.4f} across every turn in "
                        "flight)")
        return ""

    def limit(self, provider: str, resets_at: float | None) -> None:
        with self._lock:
            until = resets_at if resets_at is not None else time.time() + UNKNOWN_RESET
            self._limited[provider] = max(until, self._limited.get(provider, 0.0))

    def limited_until(self, provider: str) -> float | None:
        """When the provider's limit, seen by some turn, resets; None when it is not limited now."""
        with self._lock:
            until = self._limited.get(provider)
            if until is not None and until <= time.time():
                del self._limited[provider]
                return None
            return until
