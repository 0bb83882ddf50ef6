"""The gateway's budgets, as the governor applies them to one turn: the tightest of the turn's, the item's (at this
canon version) and the run's, in tokens and in cost. The gateway enforces the result during the turn; a budget
already spent means the turn does not start."""
from __future__ import annotations

from typing import TYPE_CHECKING

from build_loop.gateway.lease import Allowance
from build_loop.turn import Outcome, Spend, Turn
from shared.config import AgentPreset, GatewayConfig
from shared.contracts.blocks import BLOCKED
from shared.journal import Journal

if TYPE_CHECKING:
    from build_loop.gateway.server import Gateway  # aiohttp: only for a build that talks to a provider

TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def item_spent(journal: Journal, item_id: str, canon_version: int) -> tuple[int, float]:
    """Tokens and cost of every model call journaled for the item at this canon version."""
    rows = [r.data for r in journal.rows("model.call")
            if r.data.get("item") == item_id and r.data.get("canon_version") == canon_version]
    tokens = sum(int(r.get(name) or 0) for r in rows for name in TOKEN_FIELDS)
    return tokens, sum(float(r.get("cost_usd") or 0.0) for r in rows)


def allowance(gateway: GatewayConfig, item: tuple[int, float], run: tuple[int, float]) -> Allowance:
    """What a turn may spend given what the item and the run have spent (tokens, cost)."""
    tokens = [(limit - spent, source) for limit, spent, source in (
        (gateway.max_turn_tokens, 0, "turn"), (gateway.max_item_tokens, item[0], "item"),
        (gateway.max_run_tokens, run[0], "run")) if limit]
    costs = [(limit - spent, source) for limit, spent, source in (
        (gateway.max_turn_cost_usd, 0.0, "turn"), (gateway.max_item_cost_usd, item[1], "item"),
        (gateway.max_run_cost_usd, run[1], "run")) if limit]
    token_limit, token_source = min(tokens) if tokens else (None, "")
    cost_limit, cost_source = min(costs) if costs else (None, "")
    return Allowance(token_limit, cost_limit, token_source, cost_source)


def exhausted(allowance: Allowance) -> tuple[str, str]:
    """(why no turn may start, whose budget it is: turn, item or run), or ("", "")."""
    if allowance.tokens is not None and allowance.tokens <= 0:
        return f"the {allowance.tokens_from} token budget at the gateway is spent", allowance.tokens_from
    if allowance.cost_usd is not None and allowance.cost_usd <= 0:
        return f"the {allowance.cost_from} cost budget at the gateway is spent", allowance.cost_from
    return "", ""


def run_spent(gateway: GatewayConfig, tokens: int, cost: float) -> str:
    """Why this run may not start another turn through the gateway, or ""."""
    if gateway.max_run_tokens and tokens >= gateway.max_run_tokens:
        return f"gateway token budget: {tokens} of {gateway.max_run_tokens} tokens used by this run"
    if gateway.max_run_cost_usd and cost >= gateway.max_run_cost_usd:
        return f"gateway cost budget: ${cost:.4f} of ${gateway.max_run_cost_usd:.4f} used by this run"
    return ""


def spent_outcome(journal: Journal, turn: Turn, why: str, source: str) -> Outcome:
    """No turn starts on a spent budget: the item's blocks the item, the run's stops the run."""
    return spent(journal, turn.item.id, turn.canon.version, turn.history.attempts, why, source)


def spent(journal: Journal, item_id: str, canon_version: int, attempts: int, why: str, source: str) -> Outcome:
    if source == "item":
        journal.append(BLOCKED, {"item": item_id, "canon_version": canon_version, "attempts": attempts,
                                 "evidence": {"reason": why, "failing": None, "excerpt": "", "iteration": None}})
        return Outcome("blocked", f"{item_id}: blocked: {why}", None, item_id)
    return Outcome("budget_exhausted", f"build-loop: {why}", None, item_id)


def open_lease(config: GatewayConfig, gateway: Gateway, journal: Journal, turn: Turn, preset: AgentPreset,
               spend: Spend) -> Outcome | None:
    """The turn's lease at the gateway within what its item's and the run's budgets leave (turn.lease), or the Outcome
    that says a budget is already spent."""
    item = item_spent(journal, turn.item.id, turn.canon.version) if (
        config.max_item_tokens or config.max_item_cost_usd) else (0, 0.0)
    granted = allowance(config, item, (spend.tokens, spend.cost))
    why, source = exhausted(granted)
    if why:
        return spent_outcome(journal, turn, why, source)
    turn.lease = gateway.open_turn(str(preset.provider), upstream_model=preset.upstream_model, allowance=granted,
                                   log=turn.folder / "calls.jsonl")
    return None
