"""plan-loop: the judge. Regenerates fix_plan from canon and code, never amends it, and certifies."""
from __future__ import annotations

import json
from pathlib import Path

import click

from plan_loop.agent_oracle import PlanAgent, make_agent
from plan_loop.passes import PassReport, PlanService
from plan_loop.run import serve_plan
from shared import lifeline, role_lock
from shared.boundary import program_options, run_cli, startup_line, workspace_option
from shared.checks.remote import RemoteChecker
from shared.contracts import fix_plan as fix_plan_file
from shared.contracts.fix_plan import FixPlan
from shared.daemon import Stopper
from shared.isolation.policy import restrict_self, start_views
from shared.workspace import Workspace


def _service(workspace: Path, command: str) -> PlanService:
    """Plan's one process of the workspace for this command (shared/role_lock.py), restricted to plan's stores."""
    ws = Workspace.open(workspace)
    role_lock.claim(ws, "plan", f"plan-loop {command}")
    remote = None
    start_views(ws, "plan")  # before Ray's threads: the thread that makes the checks' views must be the second
    if ws.config.cluster.backend == "ray":  # Ray's driver opens its logs and sockets outside plan's stores: first
        remote = RemoteChecker(ws)
    startup_line(restrict_self(ws, "plan").banner("plan-loop"))
    if remote is not None:
        click.echo(f"plan-loop: checks run as tasks on the Ray cluster at {ws.config.cluster.address}", err=True)
    return PlanService(ws, remote=remote)


def _agent(service: PlanService, agent_command: str) -> PlanAgent | None:
    return make_agent(service.ws, agent_command)


agent_command_option = click.option("--agent-command", default="", metavar="CMD",
                                    help="plan agent for this run: judges requirements that have no check (JSON answer)")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="banach", message="%(prog)s (banach) %(version)s")
@program_options
def cli() -> None:
    """plan-loop: measures the distance between canon and the code, from scratch, every pass.

    Example: plan-loop once --workspace ws
    """


def _pass_json(report: PassReport) -> dict[str, object]:
    return {"pass": report.number, "canon_version": report.canon_version, "code_commit": report.code_commit,
            "residual": report.residual, "certified": report.certified, "fresh": report.fresh,
            "items": list(report.items), "checks_run": report.checks_run, "checks_memoized": report.checks_memoized,
            "unmeasured": list(report.unmeasured), "void": list(report.void), "export_error": report.export_error,
            "agent_rejections": list(report.agent_rejections), "plan_agent": report.plan_agent,
            "measured": report.measured, "requirements": report.requirements}


def _once_json(reports: list[PassReport], plan: FixPlan | None) -> dict[str, object]:
    """The last pass (the certifying one, when a pass found nothing), its fix_plan's items in full, and every pass."""
    last = reports[-1]
    items = plan.items if plan is not None and plan.pass_number == last.number else ()
    return {**_pass_json(last),
            "items": [{"id": i.id, "kind": i.kind, "priority": i.priority, "requirements": list(i.requirements),
                       "title": i.title, "depends_on": list(i.depends_on)} for i in items]
            or [{"id": item_id} for item_id in last.items],
            "message": "\n".join(report.describe() for report in reports),
            "passes": [_pass_json(report) for report in reports]}


@cli.command()
@workspace_option
@agent_command_option
@click.option("--json", "as_json", is_flag=True,
              help="print one JSON object: pass, canon_version, code_commit, residual, certified, items, message, passes")
def once(workspace: Path, agent_command: str, as_json: bool) -> None:
    """One plan pass (and a fresh certifying pass if it finds nothing); prints the residual.

    Example: plan-loop once --workspace ws --json
    """
    service = _service(workspace, "once")
    try:
        reports = service.measure(agent=_agent(service, agent_command))
    finally:
        service.close()
    if as_json:
        click.echo(json.dumps(_once_json(reports, fix_plan_file.read(service.ws.fix_plan_json))))
        return
    for report in reports:
        click.echo(report.describe())


@cli.command()
@workspace_option
@agent_command_option
@click.pass_context
def certify(ctx: click.Context, workspace: Path, agent_command: str) -> None:
    """A fresh pass, memo ignored; records a certificate only if it finds nothing. Exit 1 otherwise.

    Example: plan-loop certify --workspace ws
    """
    service = _service(workspace, "certify")
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
    service = _service(workspace, "run")
    watching = lifeline.watch(service.ws, stopper.stop)
    if watching:
        click.echo(f"plan-loop: {watching}", err=True)
    try:
        serve_plan(service, echo=click.echo, stopper=stopper, agent=_agent(service, agent_command))
    finally:
        service.close()


def main() -> None:
    run_cli(cli, "plan-loop")
