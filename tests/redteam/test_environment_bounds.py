"""A turn whose change needs a new environment pays for its build out of the turn's budget, under the build's caps
(issue 40). The hostile program is tests/helpers/agents/hostile/heavy_build.py: a dependency (so the change needs an
environment of its own) and a setup.py that the environment's metadata step runs, which takes 1.5 GiB and sleeps ten
minutes; before, a turn with turn_timeout 60 took 193 s and 214 s so. Under Landlock, each step in a view of its own:

- memory: [env] max_memory_bytes = 1 GiB, and the step's cgroup kills it as it takes the memory;
- time: the default caps (4 GiB, which hold it), and the step is stopped when what was left of the turn is spent.

Either way the turn ends within its budget and is rolled back with the reason, and the cache keeps nothing of it."""
from __future__ import annotations

import sys
import time

import pytest

from shared.environment.cache import EnvCache
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import HELPERS, cli, set_config

HEAVY = HELPERS / "agents" / "hostile" / "heavy_build.py"
TURN_TIMEOUT = 45.0
SLACK = 3.0  # seconds past the budget for the roll-back and its record


@pytest.mark.slow
@pytest.mark.landlock
@pytest.mark.parametrize("bound", ["memory", "time"])
def test_a_build_that_holds_memory_and_sleeps_ends_within_the_turn(wide_landlock: Workspace, bound: str) -> None:
    ws = wide_landlock
    if bound == "memory":
        set_config(ws.root, extra="[env]\nmax_memory_bytes = 1073741824  # 1 GiB\n")
    started = time.monotonic()
    result = cli("build-loop", "once", "--workspace", str(ws.root), "--agent-command", f"{sys.executable} {HEAVY}",
                 "--turn-timeout", str(TURN_TIMEOUT), timeout=600)
    took = time.monotonic() - started
    assert result.returncode == 0, result.stdout + result.stderr
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        began, row = journal.last("iteration.started"), journal.last("iteration.ended")
    assert began is not None and row is not None
    assert row.data["decision"] == "rollback" and row.data["changed"] == ["requirements.txt", "setup.py"], row.data
    reason = row.data["reason"]
    prefix = "the change breaks the project's environment: the project's environment could not be built within "
    if bound == "memory":
        assert reason.startswith(prefix + "its caps: its metadata step hit memory limit 1 GiB hit (OOM kill)"), reason
    else:
        assert reason.startswith(prefix + "the turn's budget (") and "its metadata step was stopped after" in reason, \
            reason
    assert row.ts - began.ts < TURN_TIMEOUT + SLACK, (row.ts - began.ts, reason)  # the agent's turn and the build
    assert took < TURN_TIMEOUT + 60, took  # the whole iteration: with its checkpoint's reading and start-up
    assert not (ws.code / "setup.py").exists() and not (ws.code / "requirements.txt").exists()  # rolled back
    cache = EnvCache.of(ws, "build").root
    assert not list(cache.glob("*/env.json")) and not list(cache.glob("*.building")), list(cache.iterdir())
