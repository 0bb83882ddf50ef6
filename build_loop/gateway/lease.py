"""What one turn holds of the gateway: its allowance, its lease and the calls made under it. Plain values, without
the server, so that a build whose ladder talks to no provider never imports aiohttp."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Allowance:
    """What one turn may still spend: the tightest of the turn's, the item's and the run's budgets, and which."""

    tokens: int | None = None
    cost_usd: float | None = None
    tokens_from: str = ""  # "turn", "item", "run"
    cost_from: str = ""


@dataclass(frozen=True)
class Call:
    """One call of a turn, as journaled (the model.call row)."""

    seq: int
    path: str
    provider: str
    wire: str
    model_call: bool
    requested_model: str | None
    model: str | None  # as sent upstream
    status: int
    stream: bool
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None
    latency_ms: float
    first_byte_ms: float | None
    request_digest: str
    response_digest: str
    resets_at: float | None = None
    error: str = ""  # the gateway's own failure (upstream unreachable, refused by budget)

    def as_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}  # flat: no deep copy as asdict makes


@dataclass
class Lease:
    """One turn's access to the gateway."""

    token: str
    url: str
    provider: str
    upstream_model: str
    allowance: Allowance
    log: Path | None
    halt: threading.Event = field(default_factory=threading.Event)
    stop_reason: str = ""  # "rate_limited" | "budget", once the gateway stopped the turn
    stop_message: str = ""
    resets_at: float | None = None
    calls: list[Call] = field(default_factory=list)
    closed: bool = False
    in_flight: int = 0  # calls forwarded and not yet recorded

    @property
    def tokens(self) -> int:
        return sum(c.input_tokens + c.output_tokens + c.cache_read_tokens + c.cache_write_tokens for c in self.calls)

    @property
    def cost_usd(self) -> float | None:
        costs = [c.cost_usd for c in self.calls if c.cost_usd is not None]
        return round(sum(costs), 6) if costs else None

    def stop(self, reason: str, message: str, resets_at: float | None = None) -> None:
        if not self.stop_reason:
            self.stop_reason, self.stop_message, self.resets_at = reason, message, resets_at
        self.halt.set()

    def over_budget(self) -> str:
        """Why this turn may not spend more, or ""."""
        allowance = self.allowance
        if allowance.tokens is not None and self.tokens >= allowance.tokens:
            return f"the {allowance.tokens_from} token budget is spent ({self.tokens} of {allowance.tokens} tokens this turn)"
        cost = self.cost_usd or 0.0
        if allowance.cost_usd is not None and cost >= allowance.cost_usd:
            return f"the {allowance.cost_from} cost budget is spent (${cost:.4f} of ${allowance.cost_usd:.4f} this turn)"
        return ""
