"""banach: set up a workspace, run the demo, start and stop the loops, and read where they stand."""
from __future__ import annotations

import json
from pathlib import Path

import click

from shared.app.cli_record import COMMANDS as RECORD_COMMANDS
from shared.app.sections import SectionedGroup
from shared.boundary import program_options, run_cli, verbose, workspace_option
from shared.workspace import Workspace


@click.group(cls=SectionedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="banach", message="%(prog)s (banach) %(version)s")
@program_options
def cli() -> None:
    """banach: three loops (spec, plan, build) that converge code on a falsifiable canon, and decide
    "done" by a fresh plan pass, never by the agent's word.

    Example: banach demo
    """


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--example", is_flag=True, help="copy the bundled example (textkit), as 'banach demo' starts it")
@click.option("--code", "code_source", metavar="REPO", default="",
              help="clone this git repository (a path or URL) as the code build-loop changes; default: a new, empty repo")
@click.option("--users", "with_users", is_flag=True, help="use the users backend: create the role accounts (needs root)")
def init(directory: Path, example: bool, code_source: str, with_users: bool) -> None:
    """Make a new workspace in DIRECTORY: banach.toml, canon, inbox, code, fix_plan and journals.

    Build commits to the clone's current branch; 'banach deliver' puts them on a branch of REPO.

    Example: banach init ./ws --code ~/src/myproject   (or: banach init ./ws --example)
    """
    from shared.app.init import init_workspace, next_steps

    ws = init_workspace(directory, example=example, code_source=code_source)
    if with_users:
        from shared.isolation.users import setup_users

        ws.config_file.write_text(ws.config_file.read_text().replace('backend = "landlock"', 'backend = "users"'))
        for account in setup_users(Workspace.open(ws.root)):
            click.echo(f"account {account.name} (uid {account.uid}) owns its stores")
    click.echo(f"workspace ready in {ws.root}" + (" (the bundled example; its agent is SIMULATED)" if example else ""))
    click.echo(next_steps(ws, example=example))


@cli.command("setup-users")
@workspace_option
def setup_users_command(workspace: Path) -> None:
    """Create one system account per role and give each its stores (the users backend; needs root).

    Example: sudo banach setup-users -w ws
    """
    from shared.isolation.users import setup_users

    for account in setup_users(Workspace.open(workspace)):
        click.echo(f"account {account.name} (uid {account.uid}) owns its stores")
    click.echo("set isolation.backend = \"users\" in banach.toml to use it")


@cli.command()
@workspace_option
@click.pass_context
def doctor(ctx: click.Context, workspace: Path) -> None:
    """Check the machine (Landlock ABI, accounts, ownership, supervisord, git) and say what to fix.

    Example: banach doctor -w ws
    """
    from shared.app.doctor import Finding, examine
    from shared.errors import ConfigError

    broken: list[Finding] = []
    try:
        ws: Workspace | None = Workspace.open(workspace)
    except ConfigError as exc:
        ws = None
        if (workspace / "banach.toml").exists():  # a workspace whose configuration does not load: that is the finding
            broken.append(Finding(False, f"workspace {workspace}: {exc}", "fix banach.toml, then run banach doctor again"))
            click.echo(f"(the workspace at {workspace} does not load: checking the machine, and the workspace not)")
        else:
            click.echo(f"(no workspace at {workspace}: checking the machine only)")
    findings = broken + examine(ws)
    for finding in findings:
        click.echo(("ok    " if finding.ok else "FIX   ") + finding.what + (f"\n      -> {finding.fix}" if finding.fix else ""))
    ctx.exit(0 if all(f.ok for f in findings) else 1)


@cli.group()
def export() -> None:
    """Write deployment files for the workspace.

    Example: banach export systemd -o /etc/systemd/system
    """


@export.command("systemd")
@workspace_option
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), default=Path("systemd"),
              show_default=True, help="folder for the unit files")
def export_systemd(workspace: Path, output: Path) -> None:
    """Unit files for a production host: one per role, with User= and ReadWritePaths= from the write table.

    Example: banach export systemd -o ./units
    """
    from shared.app.systemd import export as export_units

    for path in export_units(Workspace.open(workspace), output):
        click.echo(f"wrote {path}")


@cli.command()
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="where to put the demo workspace (default: a new temp dir)")
@click.option("--seed", type=int, default=None, help="seed of the simulated agent's faults (default: the example's, 1)")
@click.option("--budget", type=float, default=170.0, show_default=True, help="seconds before the demo gives up")
@click.pass_context
def demo(ctx: click.Context, directory: Path | None, seed: int | None, budget: float) -> None:
    """Run the bundled example under supervisord until plan certifies convergence; exit 0 only if it does.

    The agent is SIMULATED: a scripted stand-in for an LLM that applies reference changes with injected
    faults (wrong edits, no edit, edits outside its scope), so the governor has something to catch.

    Example: banach demo --seed 3
    """
    from shared.app.demo import run_demo

    result = run_demo(directory, seed, budget, click.echo)
    click.echo(result.summary)
    ctx.exit(0 if result.certified else 1)


@cli.command()
@workspace_option
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def status(workspace: Path, as_json: bool) -> None:
    """Canon version, code commit, residual, certificate, q and diagnosis, processes, isolation, paths.

    Example: banach status --json
    """
    from shared.app.status import render
    from shared.app.status import status as read_status

    info = read_status(Workspace.open(workspace))
    click.echo(json.dumps(info, indent=2, default=str) if as_json else render(info))


@cli.command()
@workspace_option
def up(workspace: Path) -> None:
    """Start spec-loop, plan-loop and build-loop under supervisord for the workspace; never a second set: loops of the
    workspace running outside a supervisor (found by their locks) are stopped first.

    Example: banach up -w ws && banach ctl -w ws status
    """
    from shared.app import supervisor
    from shared.app.simulated import refuse_simulated

    ws = Workspace.open(workspace)
    refuse_simulated(ws)
    for program in supervisor.up(ws, echo=lambda line: click.echo(line, err=True)):
        click.echo(f"{program.role:6} {program.state.lower():8} pid {program.pid}")
    if ws.config.serve.enabled:
        from shared.dashboard.auth import load_or_create_token

        click.echo(f"dashboard: http://{ws.config.serve.host}:{ws.config.serve.port}/?token={load_or_create_token(ws)}")
    click.echo(f"banach ctl status   # supervisorctl with this workspace's config, from any folder in it "
               f"(or: supervisorctl -c {ws.supervisor_conf} status)")


@cli.command()
@workspace_option
@click.option("--host", default=None, help="the address to listen on (default: [serve] host, 127.0.0.1)")
@click.option("--port", type=int, default=None, help="the port (default: [serve] port, 8765; 0: any free one)")
@click.option("--print-url", is_flag=True, help="print the dashboard's URL with its token and exit")
def serve(workspace: Path, host: str | None, port: int | None, print_url: bool) -> None:
    """The dashboard: where the loops stand, every turn, canon, spend and the journals, live in a browser; unblock,
    pause, resume, restart and canon edits through the loops' own executables. It prints its URL with the token.

    Example: banach serve -w ws   (or [serve] enabled = true in banach.toml, and banach up starts it)
    """
    ws = Workspace.open(workspace)
    host = host or ws.config.serve.host
    port = ws.config.serve.port if port is None else port
    if print_url:
        from shared.dashboard.auth import load_or_create_token

        click.echo(f"http://{host}:{port}/?token={load_or_create_token(ws)}")
        return
    from shared.dashboard.server import serve as serve_dashboard

    serve_dashboard(ws, host, port, echo=lambda line: click.echo(line, err=True))


@cli.command()
@workspace_option
def down(workspace: Path) -> None:
    """Stop the loops (each finishes or abandons its step, journaled) and supervisord; then any loop of the workspace
    still running outside it (found by its lock: one whose supervisord died, one started by hand). Exit 1 when loops
    run on under systemd, which systemctl stops.

    Example: banach down -w ws
    """
    from shared.app import supervisor

    result = supervisor.down(Workspace.open(workspace))
    click.echo(result.summary())
    result.refuse_left()


@cli.command("run")
@workspace_option
@click.option("--until-certified", is_flag=True,
              help="the stop condition: plan certifies (exit 0), or a budget runs out or nothing can progress (exit 1)")
@click.option("--max-turns", type=click.IntRange(min=0), default=0, metavar="N",
              help="stop after N build turns (agent runs); 0: no limit")
@click.option("--max-cost", type=click.FloatRange(min=0), default=0.0, metavar="USD",
              help="stop once build's turns have cost this much (as the gateway or the agent reports it); 0: no limit")
@click.option("--agent-command", default="", metavar="CMD",
              help="run this program as build's agent (prompt on stdin) instead of the configured preset")
@click.option("--json", "as_json", is_flag=True,
              help="steps to stderr, and one JSON object on stdout at the end: certified, exit_code, reason, turns, cost_usd")
@click.pass_context
def run_foreground(ctx: click.Context, workspace: Path, until_certified: bool, max_turns: int, max_cost: float,
                   agent_command: str, as_json: bool) -> None:
    """Run spec, plan and build in the foreground, without supervisord, until plan certifies: for CI.

    Each step is the real spec-loop, plan-loop or build-loop, in its own process with its own write permissions:
    intake, a plan pass, build turns until build is idle, a plan pass again, and so on. One line per step. Exit 0
    only when plan certifies; 1 when a budget runs out or nothing can progress (blocked items, a paused agent, a
    refused inbox), with one line saying which and what to do; 128 + the signal on SIGINT or SIGTERM (the running
    step is stopped cleanly).

    Example: banach run --until-certified --max-turns 30 --max-cost 5 -w ws
    """
    from shared.app.foreground import Budgets, run_until_certified

    if not until_certified:
        raise click.UsageError(
            "banach run needs its stop condition named: --until-certified (exit 0 when plan certifies, 1 when a "
            "budget runs out or nothing can progress; bound it with --max-turns N and --max-cost USD). To keep the "
            "loops running in the background instead, use 'banach up'.")
    from shared.app.simulated import refuse_simulated

    echo = (lambda line: click.echo(line, err=True)) if as_json else click.echo
    ws = Workspace.open(workspace)
    refuse_simulated(ws, agent_command)
    result = run_until_certified(ws, Budgets(max_turns, max_cost), echo=echo,
                                 echo_err=lambda line: click.echo(line, err=True), agent_command=agent_command,
                                 verbose=verbose())
    if as_json:
        click.echo(json.dumps({"certified": result.certified, "exit_code": result.exit_code, "reason": result.reason,
                               "turns": result.turns, "cost_usd": result.cost_usd}))
    ctx.exit(result.exit_code)


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@workspace_option
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def ctl(ctx: click.Context, workspace: Path, arguments: tuple[str, ...]) -> None:
    """supervisorctl with this workspace's config and credentials, from any folder inside the workspace.

    ARGUMENTS go to supervisorctl as they are (none: its interactive shell). Options of banach ctl come first.

    Example: banach ctl status   (or: banach ctl -w ws restart build)
    """
    from shared.app.supervisor import supervisorctl

    ctx.exit(supervisorctl(Workspace.open(workspace), list(arguments)))


@cli.command()
@workspace_option
@click.option("--to", "target", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="REPO",
              help="the git repository to deliver into (default: the one 'banach init --code' cloned)")
@click.option("--branch", default="banach/result", show_default=True, help="the branch to create or move forward")
@click.option("--with-tests", is_flag=True,
              help="add one commit with canon's conformance tests that justified the governed commits")
@click.option("--with-held-back", is_flag=True,
              help="with --with-tests: add the held-back tests too (then any later agent of this code can read them)")
@click.option("--force", is_flag=True, help="move the branch even when its commit is not an ancestor of the result")
@click.pass_context
def deliver(ctx: click.Context, workspace: Path, target: Path | None, branch: str, with_tests: bool,
            with_held_back: bool, force: bool) -> None:
    """Put the governed commits onto a branch of your repository, and say what each claims and what certified them.

    Exits 0 when plan certified exactly the delivered code; 3 when the branch was written but the code is NOT
    CERTIFIED (for a person to review, not to merge on trust).

    Example: banach deliver --with-tests   (or: banach deliver --to ~/src/myproject --branch banach/result)
    """
    from shared.app.deliver import deliver as deliver_result

    delivery = deliver_result(Workspace.open(workspace), target=target, branch=branch, with_tests=with_tests,
                              force=force, with_held_back=with_held_back)
    click.echo(delivery.summary())
    ctx.exit(0 if delivery.certified else 3)


@cli.command()
@workspace_option
@click.option("--from", "source", default="", metavar="REPO",
              help="the repository to take new commits from (default: the one 'banach init --code' cloned)")
@click.option("--branch", default="", help="its branch (default: the one the clone followed; with --from: main)")
def refresh(workspace: Path, source: str, branch: str) -> None:
    """Bring new commits of your repository into the governed code, between turns: a fast-forward when build kept
    nothing since, else a merge commit when the histories merge cleanly (a conflict changes nothing).

    Example: banach refresh -w ws   (or: banach refresh --from ~/src/myproject --branch main)
    """
    from shared.app.refresh import refresh as bring_in

    ws = Workspace.open(workspace)
    click.echo(bring_in(ws, source=source, branch=branch).summary(ws))


for _command in RECORD_COMMANDS:  # logs, journal, monitor, plot: shared/app/cli_record.py
    cli.add_command(_command)


def main() -> None:
    run_cli(cli, "banach")
