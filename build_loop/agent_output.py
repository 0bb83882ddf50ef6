"""What an agent CLI's own output says about its turn: the cost it printed (claude), a usage or rate limit in its
own words (with the reset time where it gives one), and a claim of success, which is recorded and never believed.
Through the gateway the limit and the cost are known without reading any of this."""
from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass

from build_loop.clis import CLIS
from shared.config import Config


@dataclass(frozen=True)
class TurnReport:
    """What the agent's own output says about the turn."""

    cost_usd: float | None = None
    rate_limited: bool = False
    resets_at: float | None = None  # epoch seconds, when the CLI printed one
    claimed_success: bool = False


# Beside each CLI's own words (build_loop/clis), those of any program, only together with a non-zero exit, and the
# simulated agent's.
_LIMIT_PATTERNS = {
    "command": re.compile(r"usage limit|rate[_ ]limit|too many requests|quota exceeded|RESOURCE_EXHAUSTED", re.IGNORECASE),
    "sim": re.compile(r"SIMULATED RATE LIMIT", re.IGNORECASE),
}

_EPOCH_RESET = re.compile(r"limit reached\|(\d{9,11})")
_CLOCK_RESET = re.compile(r"resets?(?: at)? (\d{1,2})(?::(\d\d))?\s*(am|pm)?", re.IGNORECASE)
# "try again in 20 seconds", Gemini's "Please retry in 20s", and OpenAI's own "try again in 20s", "1m30s",
# "820ms" (as pi and opencode print it)
_IN_RESET = re.compile(r"(?:try again|retry) in "
                       r"((?:\d+(?:\.\d+)?\s*(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)(?![a-z])\s*)+)",
                       re.IGNORECASE)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|mil|s|m|h)", re.IGNORECASE)
_UNIT_SECONDS = {"ms": 0.001, "mil": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_SUCCESS_CLAIM = re.compile(r"\b(SUCCESS|all tests pass(?:ed)?|task complete|<promise>.*</promise>)", re.IGNORECASE)


def read_turn(config: Config, name: str, stdout: str, stderr: str, returncode: int, *, now: float,
              timed_out: bool = False) -> TurnReport:
    """timed_out: the turn was stopped at its budget. A CLI may then exit 0 (aider does on SIGINT), so its words of
    a limit count as they do with a non-zero exit."""
    kind = "command" if name not in config.agents else config.agents[name].preset
    text = stdout + "\n" + stderr
    cost = None
    if kind == "claude":
        try:
            cost = float(json.loads(stdout.strip().splitlines()[-1]).get("total_cost_usd"))
        except (ValueError, IndexError, TypeError, AttributeError):
            cost = None
    pattern = CLIS[kind].limit if kind in CLIS else _LIMIT_PATTERNS.get(kind, _LIMIT_PATTERNS["command"])
    limited = bool(pattern.search(text)) and (returncode != 0 or timed_out or kind == "sim")
    return TurnReport(cost, limited, _reset_time(text, now) if limited else None, bool(_SUCCESS_CLAIM.search(text)))


def _reset_time(text: str, now: float) -> float | None:
    epoch = _EPOCH_RESET.search(text)
    if epoch:
        return float(epoch.group(1))
    later = _IN_RESET.search(text)
    if later:
        return now + sum(float(amount) * _UNIT_SECONDS[unit.lower()]
                         for amount, unit in _DURATION_PART.findall(later.group(1)))
    clock = _CLOCK_RESET.search(text)
    if clock:
        hour, minute = int(clock.group(1)) % 12 if clock.group(3) else int(clock.group(1)), int(clock.group(2) or 0)
        if clock.group(3) and clock.group(3).lower() == "pm":
            hour += 12
        local = dt.datetime.fromtimestamp(now).astimezone()
        reset = local.replace(hour=hour % 24, minute=minute, second=0, microsecond=0)
        if reset.timestamp() <= now:
            reset += dt.timedelta(days=1)
        return reset.timestamp()
    return None
