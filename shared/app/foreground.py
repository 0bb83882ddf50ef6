"""`banach run --until-certified`: the three loops in the foreground, one step at a time, until plan certifies
or nothing more can happen; for CI, without supervisord.

Each step is the real program of its role, started as its own process, so each keeps its own OS write
permissions (it restricts itself at start-up, as under supervisord): `spec-loop once` takes the inbox,
`plan-loop once --json` measures (and certifies when a pass finds nothing), and `build-loop once --json`
takes one item per turn until it is idle; then plan measures again, and so on. This process reads their
answers and the stores, and writes nothing of the workspace.

It stops with:
  certified     plan's fresh pass found nothing (exit 0);
  a budget      --max-turns or --max-cost, or the gateway's run budget, is spent (exit 1);
  no progress   a whole round in which build could not take a turn: items blocked, or build and plan
                disagree about an item (exit 1); or build is paused (its agent fails to start, an oscillation);
  refused       spec-loop refused the inbox's change, or a step failed (exit 1);
  a signal      SIGINT, SIGTERM or SIGHUP: the running step is stopped (SIGINT, then SIGTERM, then SIGKILL to
                its process group; a build turn is rolled back and journaled) and the exit code is 128 + signal.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from canon.store import CanonStore
from shared.app import loops, supervisor
from shared.daemon import Stopper
from shared.process import Outcome, Request, run
from shared.workspace import Workspace

MODULES = {"spec-loop": "spec_loop", "plan-loop": "plan_loop", "build-loop": "build_loop"}
STEP_TIMEOUT = 7 * 24 * 3600.0  # a step ends by itself (turn and check time-outs bound it); this only guards a hang
STOP_GRACE = 20.0  # seconds between SIGINT, SIGTERM and SIGKILL when a signal stops the running step
MAX_LIMIT_WAIT = 300.0  # a provider's usage limit that resets sooner is waited out; a later one ends the run
# Build decisions that are not an agent turn (nothing was spent on the item), as `build-loop run` counts them.
NOT_A_TURN = frozenset({"idle", "already_green", "interrupted", "paused", "blocked", "budget_exhausted"})


@dataclass(frozen=True)
class Budgets:
    max_turns: int = 0  # 0: no limit
    max_cost_usd: float = 0.0


@dataclass(frozen=True)
class RunResult:
    certified: bool
    exit_code: int
    reason: str  # one line: what certified, or what stopped the run and what to do
    turns: int
    cost_usd: float


class Stop(Exception):
    """The run ends here, not certified; the message is the one line a person reads."""

    def __init__(self, reason: str, exit_code: int = 1, *, for_a_person: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.exit_code = reason, exit_code
        self.for_a_person = for_a_person  # only a person can clear it: the last line leads with what waits for one


class Foreground:
    def __init__(self, ws: Workspace, budgets: Budgets, *, echo: Callable[[str], None],
                 echo_err: Callable[[str], None], stopper: Stopper, agent_command: str = "", verbose: bool = False) -> None:
        self.ws = ws
        self.verbose = verbose  # -v: the loops print their isolation banners (once each: _banner)
        self.budgets = budgets
        self.echo, self.echo_err = echo, echo_err
        self.stopper = stopper
        self.agent_command = agent_command
        self.turns, self.cost = 0, 0.0
        self.last_plan: dict[str, Any] = {}
        self.banners: set[str] = set()
        self.spec_said: list[str] = []
        self.spent, self.spent_hint = "", ""  # the budget that ended build's turns, and what to do

    # the loop ----------------------------------------------------------------------------------
    def run(self) -> RunResult:
        try:
            if supervisor.running(self.ws):
                raise Stop(f"the loops of {self.ws.root} are running under supervisord ('banach up'); stop them with "
                           f"'banach down -w {self.ws.root}' first, or follow them with 'banach status -w {self.ws.root}'")
            running = loops.find(self.ws)  # started by hand, or left by a supervisord that died
            if running:
                raise Stop(f"{'; '.join(loop.describe() for loop in running)} already runs in {self.ws.root}, and a "
                           "workspace runs one process per role; wait for it to end, or stop it with "
                           f"'banach down -w {self.ws.root}'")
            while True:
                self._spec()
                plan = self._plan()
                if plan["certified"]:
                    return self._certified(plan)
                if self.spent:  # the budget ended build's turns; this pass measured what they left
                    raise Stop(f"{self.spent}; {self._residual()}; {self.spent_hint}")
                if plan["residual"] == 0 and not plan.get("measured"):
                    raise Stop(f"nothing to certify: canon v{plan['canon_version']} has {plan.get('requirements', 0)} "
                               "requirement(s) and none is measured; give them `tests:` or `checks:` (docs/canon.md)")
                if plan["residual"] == 0:
                    raise Stop("plan found no open item but could not certify: "
                               + (plan.get("export_error") or "its certifying pass was not fresh").splitlines()[0])
                turns, last = self._build_until_idle()
                if turns == 0 and not self.spent and CanonStore(self.ws.canon).version() == plan["canon_version"]:
                    raise Stop(self._no_progress(last), for_a_person=bool(last.get("blocked")))
        except Stop as stop:
            waiting = self._waiting() if stop.for_a_person else ""
            if waiting:  # the why of the stop, then what a person does about it, last
                self.echo(f"run: {stop.reason}")
            reason = waiting or stop.reason
            self.echo(f"run: NOT CERTIFIED: {reason}")
            return RunResult(False, stop.exit_code, reason, self.turns, self.cost)

    def _waiting(self) -> str:
        """What waits for a person now, as `banach status` leads with it (read-only, in this process)."""
        from shared.app.needs import last_line
        from shared.app.status import status

        return last_line([need for need in status(self.ws)["needs"] if need["kind"] != "unmeasured"])

    def _certified(self, plan: dict[str, Any]) -> RunResult:
        reason = (f"CERTIFIED: plan pass {plan['pass']} found nothing open at canon v{plan['canon_version']} x code "
                  f"{plan['code_commit'][:12]} ({plan.get('measured', 0)} of {plan.get('requirements', 0)} requirements "
                  f"measured), after {self.turns} build turn(s)"
                  + (f" (${self.cost:.2f})" if self.cost else "")
                  + f"; deliver it with: banach deliver -w {self.ws.root}")
        self.echo(f"run: {reason}")
        return RunResult(True, 0, reason, self.turns, self.cost)

    # the steps ---------------------------------------------------------------------------------
    def _spec(self) -> None:
        outcome = self._step("spec-loop", "once")
        said = outcome.stdout.strip()
        if outcome.returncode == 0:
            lines = said.splitlines() or ["inbox taken"]
            if lines != self.spec_said:  # an empty inbox is said once, not at every round
                for line in lines:
                    self.echo(f"spec: {line}")
            self.spec_said = lines if lines[-1].startswith("inbox is empty") else []
            return
        if outcome.returncode == 1 and any(line.startswith("refused ") for line in said.splitlines()):
            for line in said.splitlines():
                self.echo(f"spec: {line}")
            raise Stop(f"spec-loop refused the inbox's change (canon did not move): fix what "
                       f"{self.ws.relative(self.ws.inbox / 'rejected')}/*.error names, put the files back into "
                       f"{self.ws.relative(self.ws.inbox)}/ together, and run again", for_a_person=True)
        raise Stop(_failed("spec-loop once", outcome))

    def _plan(self) -> dict[str, Any]:
        outcome = self._step("plan-loop", "once", "--json")
        answer = _json_answer(outcome)
        if outcome.returncode != 0 or answer is None:
            raise Stop(_failed("plan-loop once", outcome))
        for line in str(answer.get("message", "")).splitlines():
            suffix = ""
            if line.startswith("plan pass") and answer["residual"] and f"pass {answer['pass']}:" in line:
                suffix = "; open: " + ", ".join(item["id"] for item in answer["items"])
            self.echo(line + suffix)
        self.last_plan = answer
        return answer

    def _build_until_idle(self) -> tuple[int, dict[str, Any]]:
        """Build turns until build has nothing to do for this fix_plan; (turns taken, build's last answer)."""
        turns = 0
        while True:
            self.spent, self.spent_hint = self._budget_spent()
            if self.spent:
                return turns, {}
            outcome = self._step("build-loop", "once", "--json", *(["--agent-command", self.agent_command]
                                                                   if self.agent_command else []))
            answer = _json_answer(outcome)
            if outcome.returncode != 0 or answer is None:
                raise Stop(_failed("build-loop once", outcome))
            decision = answer["decision"]
            if decision == "idle":
                return turns, answer
            if decision not in NOT_A_TURN:
                turns += 1
                self.turns += 1
            self.cost += answer.get("cost_usd") or 0.0
            self.echo(self._build_line(answer, counted=decision not in NOT_A_TURN))
            if decision == "paused":
                why = _first_line(answer["reason"]).removeprefix("build paused: ").rstrip(".")
                raise Stop(f"build is paused: {why}; banach status -w {self.ws.root} shows it; run again once it is fixed",
                           for_a_person=True)
            if decision == "budget_exhausted":
                raise Stop(f"{_first_line(answer['reason']).removeprefix('build-loop: ')} (the gateway's run budget in "
                           f"{self.ws.relative(self.ws.config_file)}); {self._residual()}")
            if decision == "rate_limited":
                self._wait_for_limit(answer)

    def _build_line(self, answer: dict[str, Any], *, counted: bool) -> str:
        lines = str(answer["message"]).strip().splitlines() or [answer["decision"]]
        at = next((index for index, line in enumerate(lines) if line.startswith("iteration ")), 0)
        main, notes = lines[at], [line for index, line in enumerate(lines) if index != at and line.strip()]
        extra = []
        if answer.get("commit"):
            extra.append(f"commit {answer['commit'][:12]}")
        if counted:
            extra.append(f"turn {self.turns}" + (f" of {self.budgets.max_turns}" if self.budgets.max_turns else ""))
        if self.cost or self.budgets.max_cost_usd:
            extra.append(f"${self.cost:.2f}" + (f" of ${self.budgets.max_cost_usd:.2f}" if self.budgets.max_cost_usd else ""))
        text = (f"build {main}" if main.startswith("iteration ") else f"build: {main}") + (f" [{', '.join(extra)}]"
                                                                                          if extra else "")
        return "\n".join([*(f"build: {note.strip()}" for note in notes), text])

    def _budget_spent(self) -> tuple[str, str]:
        """(which budget is spent, what to do), or ("", "")."""
        again = "(the workspace keeps its state)"
        if self.budgets.max_turns and self.turns >= self.budgets.max_turns:
            return (f"turn budget spent: {self.turns} of {self.budgets.max_turns} build turns (--max-turns)",
                    f"raise --max-turns and run again {again}")
        if self.budgets.max_cost_usd and self.cost >= self.budgets.max_cost_usd:
            return (f"cost budget spent: ${self.cost:.2f} of ${self.budgets.max_cost_usd:.2f} (--max-cost)",
                    f"raise --max-cost and run again {again}")
        return "", ""

    def _wait_for_limit(self, answer: dict[str, Any]) -> None:
        resets_at = answer.get("resets_at")
        wait = (resets_at - time.time()) if resets_at else None
        if wait is None or wait > MAX_LIMIT_WAIT:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(resets_at)) if resets_at else "at an unknown time"
            raise Stop(f"the provider's usage limit was hit; it resets {when}: run again then; {self._residual()}")
        self.echo(f"run: usage limit; waiting {max(wait, 1.0):.0f}s for it to reset")
        if self.stopper.event.wait(max(wait, 1.0)):
            raise self._interrupted("waiting for a usage limit")

    def _no_progress(self, last: dict[str, Any]) -> str:
        blocked = last.get("blocked") or []
        if blocked:
            for block in blocked:
                self.echo(f"build: {block['explanation']}")
            names = ", ".join(block.get("requirement") or block["item"] for block in blocked)
            return (f"nothing can progress: {len(blocked)} item(s) blocked ({names}); {self._residual()}; "
                    f"{last.get('unblock_hint') or 'unblock them once the cause is fixed'} (-w {self.ws.root}), "
                    "then run again")
        return (f"nothing can progress: build took no turn on plan's fix_plan ({_first_line(last.get('reason', ''))}); "
                f"{self._residual()}; see banach status -w {self.ws.root}")

    def _residual(self) -> str:
        plan = self.last_plan
        if not plan:
            return "no plan pass yet"
        items = ", ".join(item["id"] for item in plan.get("items", []))
        return f"residual {plan['residual']} at plan pass {plan['pass']}" + (f" ({items})" if items else "")

    # one child ---------------------------------------------------------------------------------
    def _step(self, program: str, *args: str) -> Outcome:
        if self.stopper.stopping:
            raise self._interrupted(f"before {program} {args[0]}")
        argv = (sys.executable, "-I", "-m", MODULES[program], *(["-v"] if self.verbose else []), *args,
                "--workspace", str(self.ws.root))
        outcome = run(Request(argv, cwd=self.ws.root, env=dict(os.environ), timeout=STEP_TIMEOUT, grace=STOP_GRACE),
                      cancel=self.stopper.event)
        self._banner(program, outcome.stderr)
        if outcome.cancelled or self.stopper.stopping:
            raise self._interrupted(f"during {program} {args[0]}, which was stopped"
                                    + (" (its turn rolled back and journaled)" if program == "build-loop" else ""))
        return outcome

    def _banner(self, program: str, stderr: str) -> None:
        """Each program's start-up lines (isolation, a SIMULATED agent) once, not at every step."""
        for line in stderr.splitlines():
            if line.startswith(f"{program}: ") and line not in self.banners:
                self.banners.add(line)
                self.echo_err(line)

    def _interrupted(self, where: str) -> Stop:
        name = self.stopper.signal_name or "SIGINT"
        return Stop(f"stopped by {name} {where}; {self._residual()}", 128 + signal.Signals[name].value)


def _json_answer(outcome: Outcome) -> dict[str, Any] | None:
    for line in reversed(outcome.stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        return value if isinstance(value, dict) else None
    return None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _failed(what: str, outcome: Outcome) -> str:
    errors = [line for line in outcome.stderr.splitlines() if line.startswith("Error: ") or "crashed" in line]
    said = errors[-1].removeprefix("Error: ") if errors else _first_line(outcome.stderr) or _first_line(outcome.stdout)
    return f"{what} failed (exit {outcome.returncode}): {said or 'it printed nothing'}"


def run_until_certified(ws: Workspace, budgets: Budgets, *, echo: Callable[[str], None],
                        echo_err: Callable[[str], None], agent_command: str = "", verbose: bool = False) -> RunResult:
    stopper = Stopper().install()
    return Foreground(ws, budgets, echo=echo, echo_err=echo_err, stopper=stopper, agent_command=agent_command,
                      verbose=verbose).run()
