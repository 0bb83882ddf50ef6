"""build-loop: executes one fix_plan item per fresh agent process, behind the governor."""
from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from build_loop.agent_check import check_agents
from build_loop.agents import all_state_paths
from build_loop.gateway import gateway_for, uses_gateway
from build_loop.gateway.keys import drop_key_variables, store_key
from build_loop.governor import Governor, Options
from build_loop.history import unblock_items
from build_loop.remote_lanes import RemoteLanes
from build_loop.run import serve_build
from build_loop.turn import Outcome
from build_loop.workers import serve_workers
from canon.store import CanonStore
from shared import lifeline, role_lock
from shared.boundary import program_options, run_cli, startup_line, workspace_option
from shared.contracts.blocks import cause_of, counts, current_blocks, explain, has_rounds_left, many, requirement_of, unblock_hint
from shared.daemon import Stopper
from shared.isolation.policy import reach_line, restrict_self, restrict_this_thread, start_views
from shared.iteration_report import iteration_text, latest_iteration, summary, transcript
from shared.journal import Journal
from shared.workspace import Workspace

if TYPE_CHECKING:
    from build_loop.gateway.server import Gateway  # aiohttp: imported only when a rung uses the gateway

agent_command_option = click.option("--agent-command", default="", metavar="CMD",
                                    help="run this program as the agent for this run (prompt on stdin), instead of the "
                                         "configured preset; it gets no gateway")
turn_timeout_option = click.option("--turn-timeout", type=float, default=None, metavar="S",
                                   help="wall-clock seconds for one agent turn (default: build.turn_timeout)")


def _prepare(workspace: Path, agent_command: str, command: str, *,
             before: Callable[[Workspace, Gateway | None], None] = lambda ws, gateway: None,
             after: Callable[[], None] = lambda: None) -> tuple[Workspace, Gateway | None]:
    """The workspace and its model gateway (when a rung uses one), with build restricted to its own stores and this
    process build's one process of the workspace (shared/role_lock.py); `before` runs just before the restriction
    (what must open files or sockets outside build's stores)."""
    ws = Workspace.open(workspace)
    if not agent_command and uses_gateway(ws):
        drop_key_variables(ws)  # starts build-loop again without the key variables (returns when there are none)
    role_lock.claim(ws, "build", f"build-loop {command}")  # after the exec above, which would drop the lock
    agent_state = () if agent_command else all_state_paths(ws.config)
    start_views(ws, "build")  # before the gateway's thread: the thread that makes views must be the second
    gateway = None if agent_command else gateway_for(ws)  # reads the provider keys and binds before build restricts itself
    before(ws, gateway)
    startup_line(restrict_self(ws, "build", agent_state=agent_state).banner("build-loop"))
    if gateway is not None:
        gateway.run_on_loop(restrict_this_thread)  # its thread was made before: it parses the agent's HTTP
    after()
    startup_line(f"build-loop: reach: {reach_line(ws)}")
    if gateway is not None:
        click.echo(f"build-loop: model gateway on {gateway.url} (providers: {', '.join(sorted(ws.config.gateway.providers))}; "
                   f"network: {ws.config.gateway.network})", err=True)
    first = ws.config.agents.get(ws.config.build.agent)
    if not agent_command and first is not None and first.preset == "sim":
        click.echo("build-loop: the agent is SIMULATED (a scripted stand-in for an LLM)", err=True)
    return ws, gateway


def _governor(workspace: Path, agent_command: str, turn_timeout: float | None, stopper: Stopper | None = None) -> Governor:
    ws, gateway = _prepare(workspace, agent_command, "once")
    return Governor(ws, Options(agent_command, turn_timeout), cancel=stopper.event if stopper else None, gateway=gateway)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="banach", message="%(prog)s (banach) %(version)s")
@program_options
def cli() -> None:
    """build-loop: takes the most important open fix_plan item, runs a fresh agent on it, and keeps
    the change only if the sensors say it made progress and broke nothing.

    Example: build-loop once --workspace ws
    """


def _outcome_json(outcome: Outcome, ws: Workspace) -> dict[str, object]:
    """What `once --json` prints: the human line's facts, and the items blocked now (what nothing can progress on)."""
    version = CanonStore(ws.canon).version()
    journal = Journal.reader(ws.journal_path("build"))
    blocks: dict[str, dict[str, object]] = {}
    if journal is not None:
        with journal:
            blocks = current_blocks(journal, version)
    return {
        "decision": outcome.decision, "item": outcome.item, "iteration": outcome.n, "commit": outcome.commit,
        "cost_usd": outcome.cost_usd, "resets_at": outcome.resets_at,
        "reason": str(outcome.details.get("reason") or outcome.message), "message": outcome.message,
        "canon_version": version,
        "blocked": [{"item": item, "requirement": requirement_of(item), "attempts": block.get("attempts"),
                     "spent": counts(block), "cause": cause_of(block), "rounds_left": has_rounds_left(block),
                     "explanation": explain(item, block)}
                    for item, block in sorted(blocks.items())],
        "unblock_hint": unblock_hint(ws.config.build.max_attempts * ws.config.build.rounds) if blocks else "",
    }


@cli.command()
@workspace_option
@agent_command_option
@turn_timeout_option
@click.option("--json", "as_json", is_flag=True,
              help="print one JSON object: decision, item, iteration, commit, cost_usd, reason, message, blocked items")
@click.pass_context
def once(ctx: click.Context, workspace: Path, agent_command: str, turn_timeout: float | None, as_json: bool) -> None:
    """Run one iteration: pick, checkpoint, agent turn, guards, fence, sensors, keep or roll back.

    SIGINT or SIGTERM ends the agent's turn, rolls it back and journals it (as 'build-loop run' does); the exit
    code is then 128 + the signal's number.

    Example: build-loop once --agent-command ./my-agent.sh --turn-timeout 120 --json
    """
    stopper = Stopper().install()
    governor = _governor(workspace, agent_command, turn_timeout, stopper)
    try:
        outcome = governor.iterate()
    finally:
        governor.close()
    click.echo(json.dumps(_outcome_json(outcome, governor.ws)) if as_json else outcome.message)
    if stopper.signal_name:
        ctx.exit(128 + int(signal.Signals[stopper.signal_name]))


@cli.command()
@workspace_option
@agent_command_option
@turn_timeout_option
def run(workspace: Path, agent_command: str, turn_timeout: float | None) -> None:
    """Iterate until stopped (SIGTERM) or a budget runs out; wait for plan when nothing is open. With
    build.workers = N > 1, up to N items at once, each in its own lane.

    Example: build-loop run --workspace ws
    """
    stopper = Stopper().install()
    cluster: list[RemoteLanes] = []

    def connect(ws: Workspace, gateway: Gateway | None) -> None:  # Ray's driver opens its logs and sockets outside
        if ws.config.build.workers > 1 and ws.config.cluster.backend == "ray":  # build's stores: before it restricts
            cluster.append(RemoteLanes(ws, gateway))

    def open_door() -> None:  # the gateway's door for the nodes, its thread restricted as build is
        for remote in cluster:
            remote.open(restrict_this_thread)

    ws, gateway = _prepare(workspace, agent_command, "run", before=connect, after=open_door)
    watching = lifeline.watch(ws, stopper.stop)
    if watching:
        click.echo(f"build-loop: {watching}", err=True)
    if ws.config.build.workers > 1:
        try:
            serve_workers(ws, Options(agent_command, turn_timeout), gateway=gateway, echo=click.echo, stopper=stopper,
                          remote=cluster[0] if cluster else None)
        finally:
            if gateway is not None:
                gateway.stop()
        return
    governor = Governor(ws, Options(agent_command, turn_timeout), cancel=stopper.event, gateway=gateway)
    try:
        serve_build(governor, echo=lambda line: click.echo(line), stopper=stopper)
    finally:
        governor.close()


@cli.command()
@workspace_option
@click.argument("n", type=int, required=False)
@click.option("--prompt", "what", flag_value="prompt", help="print the exact prompt iteration N saw")
@click.option("--output", "what", flag_value="output", help="print what the agent printed in iteration N")
@click.option("--transcript", "what", flag_value="transcript",
              help="print every model call of iteration N through the gateway: the request and the answer, exactly")
def report(workspace: Path, n: int | None, what: str | None) -> None:
    """Why iteration N (default: the latest) was kept or rolled back; or its prompt, output or model transcript.

    Example: build-loop report 3 --transcript
    """
    ws = Workspace.open(workspace)
    number = n if n is not None else latest_iteration(ws)
    if what == "transcript":
        click.echo(transcript(ws, number))
    else:
        click.echo(iteration_text(ws, number, what) if what else summary(ws, number))


@cli.group()
def key() -> None:
    """The provider keys of Banach's model gateway, kept where no agent can read them.

    Example: build-loop key set anthropic < ~/anthropic.key
    """


@key.command("set")
@workspace_option
@click.argument("provider")
def key_set(workspace: Path, provider: str) -> None:
    """Store PROVIDER's key (read from stdin, or asked for without echo) in state/keys/providers/PROVIDER.

    Example: build-loop key set anthropic < ~/anthropic.key
    """
    ws = Workspace.open(workspace)
    stdin = click.get_text_stream("stdin")
    value = click.prompt(f"{provider} key", hide_input=True) if stdin.isatty() else stdin.read()
    path = store_key(ws, provider, value)
    click.echo(f"stored the key of {provider} in {ws.relative(path)} (mode 0600; hidden from every agent)")


@cli.command("unblock")
@workspace_option
@click.argument("items", nargs=-1)
def unblock_command(workspace: Path, items: tuple[str, ...]) -> None:
    """Give blocked items a fresh attempt budget (all blocked items when none is named), once their cause is fixed.
    Name an item by its requirement's id (TK-1) when one blocked item is of it, or by its item id (TK-1.6211d9).
    It says how many turns each may spend now: build.max_attempts a round, for up to build.rounds rounds.

    Example: build-loop unblock TK-1
    """
    ws = Workspace.open(workspace)
    build = ws.config.build
    for item in unblock_items(ws, list(items)):
        click.echo(f"unblocked {requirement_of(item)} (item {item}) under canon v{CanonStore(ws.canon).version()}: it may "
                   f"spend up to {many(build.max_attempts * build.rounds, 'more turn')} ({many(build.max_attempts, 'attempt')} "
                   f"a round, up to {many(build.rounds, 'round')}; a round in which no attempt changed anything "
                   "is the last)")


@cli.command("resume")
@workspace_option
def resume_command(workspace: Path) -> None:
    """Lift the pause an agent that could not run put on build, once it is fixed: its next turn tries again.

    Example: build-loop resume -w ws
    """
    from build_loop.escalation import RESUMED

    ws = Workspace.open(workspace)
    with Journal.for_role(ws, "build") as journal:
        journal.append(RESUMED, {})
    click.echo("resumed: the agent gets a fresh try at build's next turn (banach status shows it)")


@cli.command("check-agent")
@workspace_option
def check_agent_command(workspace: Path) -> None:
    """Run each ladder rung's agent with --version through its sandbox; one JSON line per finding (banach doctor reads them).

    Example: build-loop check-agent -w ws
    """
    for check in check_agents(Workspace.open(workspace)):
        click.echo(json.dumps({"ok": check.ok, "what": check.what, "fix": check.fix}))


def main() -> None:
    run_cli(cli, "build-loop")
