"""One iteration as a value: what the governor knows about a turn, filled in stage by stage (see governor.py)."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from build_loop.agent_output import TurnReport
from build_loop.agents import Invocation
from build_loop.fence import FenceReport
from build_loop.gateway.lease import Lease
from build_loop.history import ItemHistory
from build_loop.sensors import Reading, Sensor
from canon.model import Canon
from shared.contracts.fix_plan import FixPlan, Item
from shared.environment import ProjectEnv
from shared.git import RefState
from shared.process import Outcome as ProcessOutcome


@dataclass(frozen=True)
class Options:
    """How this build-loop runs its agent: --agent-command and --turn-timeout."""

    agent_command: str = ""
    turn_timeout: float | None = None


@dataclass
class Spend:
    """Tokens and cost this run has spent through the gateway, added to by every lane's turns."""

    tokens: int = 0
    cost: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, tokens: int, cost: float) -> None:
        with self.lock:
            self.tokens += tokens
            self.cost += cost


@dataclass(frozen=True)
class Shared:
    """What a lane's governor shares with the scheduler and the other lanes (build.workers > 1)."""

    spend: Spend
    journal: Any = None  # build's journal by default; a cluster node's collects its rows for the head


@dataclass(frozen=True)
class Outcome:
    """What one iteration came to, as build-loop reports it."""

    decision: str  # keep, rollback, stall, agent_failed, already_green, rate_limited, abandoned, idle, interrupted, paused
    message: str
    n: int | None = None
    item: str | None = None
    commit: str | None = None
    cost_usd: float | None = None
    resets_at: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Turn:
    # chosen: what, against which plan and canon, with what history
    n: int
    item: Item
    canon: Canon
    plan: FixPlan
    history: ItemHistory
    folder: Path  # state/build/iterations/N: prompt, output, result
    scratch: Path  # removed when the turn ends
    # the checkpoint and what measures the item there
    checkpoint: str
    refs: RefState
    canon_dir: Path
    sensors: list[Sensor]
    before: Reading
    project: ProjectEnv | None = None  # the environment the sensors run in (None: Banach's own interpreter)
    # the agent's turn
    rung: str = ""
    prompt: str = ""
    invocation: Invocation | None = None
    lease: Lease | None = None  # the gateway's, when the rung talks to a provider through it
    control: dict[str, bytes | None] | None = None  # the git directory's config and info files before the turn
    ran: ProcessOutcome | None = None
    report: TurnReport | None = None
    # what the decision is journaled with, gathered as the stages run
    facts: dict[str, Any] = field(default_factory=dict)
    refs_checked: bool = False  # the guards compared (and restored) the refs: a roll-back need not again
    fenced: FenceReport | None = None

    @property
    def base(self) -> dict[str, Any]:
        return {"n": self.n, "item": self.item.id, "plan_pass": self.plan.pass_seq, "canon_version": self.canon.version}
