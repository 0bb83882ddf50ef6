"""build-loop: executes one fix_plan item per fresh agent process, behind the governor."""
from __future__ import annotations

import json
from pathlib import Path

import click

from build_loop.agent_check import check_agents
from build_loop.agents import all_state_paths
from build_loop.gateway.keys import drop_key_variables, store_key
from build_loop.gateway.server import gateway_for, uses_gateway
from build_loop.governor import Governor, Options
from build_loop.history import unblock_items
from build_loop.report import iteration_text, latest_iteration, summary, transcript
from build_loop.run import serve_build
from canon.store import CanonStore
from shared.boundary import run_cli, workspace_option
from shared.daemon import Stopper
from shared.isolation import restrict_self
from shared.workspace import Workspace

agent_command_option = click.option("--agent-command", default="", metavar="CMD",
                                    help="run this program as the agent for this run (prompt on stdin), instead of the "
                                         "configured preset; it gets no gateway")
turn_timeout_option = click.option("--turn-timeout", type=float, default=None, metavar="S",
                                   help="wall-clock seconds for one agent turn (default: build.turn_timeout)")


def _governor(workspace: Path, agent_command: str, turn_timeout: float | None, stopper: Stopper | None = None) -> Governor:
    ws = Workspace.open(workspace)
    if not agent_command and uses_gateway(ws):
        drop_key_variables(ws)  # starts build-loop again without the key variables (returns when there are none)
    agent_state = () if agent_command else all_state_paths(ws.config)
    gateway = None if agent_command else gateway_for(ws)  # reads the provider keys and binds before build restricts itself
    click.echo(restrict_self(ws, "build", agent_state=agent_state).banner("build-loop"), err=True)
    if gateway is not None:
        click.echo(f"build-loop: model gateway on {gateway.url} (providers: {', '.join(sorted(ws.config.gateway.providers))}; "
                   f"network: {ws.config.gateway.network})", err=True)
    first = ws.config.agents.get(ws.config.build.agent)
    if not agent_command and first is not None and first.preset == "sim":
        click.echo("build-loop: the agent is SIMULATED (a scripted stand-in for an LLM)", err=True)
    return Governor(ws, Options(agent_command, turn_timeout), cancel=stopper.event if stopper else None, gateway=gateway)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="banach", message="%(prog)s (banach) %(version)s")
def cli() -> None:
    """build-loop: takes the most important open fix_plan item, runs a fresh agent on it, and keeps
    the change only if the sensors say it made progress and broke nothing.

    Example: build-loop once --workspace ws
    """


@cli.command()
@workspace_option
@agent_command_option
@turn_timeout_option
def once(workspace: Path, agent_command: str, turn_timeout: float | None) -> None:
    """Run one iteration: pick, checkpoint, agent turn, guards, fence, sensors, keep or roll back.

    Example: build-loop once --agent-command ./my-agent.sh --turn-timeout 120
    """
    governor = _governor(workspace, agent_command, turn_timeout)
    try:
        click.echo(governor.iterate().message)
    finally:
        governor.close()


@cli.command()
@workspace_option
@agent_command_option
@turn_timeout_option
def run(workspace: Path, agent_command: str, turn_timeout: float | None) -> None:
    """Iterate until stopped (SIGTERM) or a budget runs out; wait for plan when nothing is open.

    Example: build-loop run --workspace ws
    """
    stopper = Stopper().install()
    governor = _governor(workspace, agent_command, turn_timeout, stopper)
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

    Example: build-loop unblock TK-1.6211d9
    """
    ws = Workspace.open(workspace)
    for item in unblock_items(ws, list(items)):
        click.echo(f"unblocked {item}: it gets a fresh attempt budget under canon v{CanonStore(ws.canon).version()}")


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
