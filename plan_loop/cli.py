"""plan-loop: the judge. Regenerates fix_plan from canon and code, never amends it, and certifies."""
from __future__ import annotations

from pathlib import Path

import click

from plan_loop.agent_oracle import PlanAgent, make_agent
from plan_loop.passes import PlanService
from plan_loop.run import serve_plan
from shared.boundary import run_cli, workspace_option
from shared.daemon import Stopper
from shared.isolation import restrict_self
from shared.workspace import Workspace


def _service(workspace: Path) -> PlanService:
    ws = Workspace.open(workspace)
    click.echo(restrict_self(ws, "plan").banner("plan-loop"), err=True)
    return PlanService(ws)


def _agent(service: PlanService, agent_command: str) -> PlanAgent | None:
    return make_agent(service.ws, agent_command)


agent_command_option = click.option("--agent-command", default="", metavar="CMD",
                                    help="plan agent for this run: judges requirements that have no check (JSON answer)")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="banach", message="%(prog)s (banach) %(version)s")
def cli() -> None:
    """plan-loop: measures the distance between canon and the code, from scratch, every pass.

    Example: plan-loop once --workspace ws
    """


@cli.command()
@workspace_option
@agent_command_option
def once(workspace: Path, agent_command: str) -> None:
    """One plan pass (and a fresh certifying pass if it finds nothing); prints the residual.

    Example: plan-loop once --workspace ws
    """
    service = _service(workspace)
    try:
        for report in service.measure(agent=_agent(service, agent_command)):
            click.echo(report.describe())
    finally:
        service.close()


@cli.command()
@workspace_option
@agent_command_option
@click.pass_context
def certify(ctx: click.Context, workspace: Path, agent_command: str) -> None:
    """A fresh pass, memo ignored; records a certificate only if it finds nothing. Exit 1 otherwise.

    Example: plan-loop certify --workspace ws
    """
    service = _service(workspace)
    try:
        report = service.run_pass(fresh=True, agent=_agent(service, agent_command))
    finally:
        service.close()
    click.echo(report.describe())
    ctx.exit(0 if report.certified else 1)


@cli.command()
@workspace_option
@agent_command_option
def run(workspace: Path, agent_command: str) -> None:
    """Re-plan whenever canon or the code's refs change (debounced), or on the timer. Stops on SIGTERM.

    Example: plan-loop run --workspace ws
    """
    stopper = Stopper().install()
    service = _service(workspace)
    try:
        serve_plan(service, echo=click.echo, stopper=stopper, agent=_agent(service, agent_command))
    finally:
        service.close()


def main() -> None:
    run_cli(cli, "plan-loop")
