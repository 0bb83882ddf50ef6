"""spec-loop: the only writer of canon."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from shared.boundary import run_cli, workspace_option
from shared.isolation import restrict_self
from shared.workspace import Workspace
from spec_loop.checks import check_canon
from spec_loop.draft import Draft, target_for
from spec_loop.edit import edit as edit_session
from spec_loop.intake import take_inbox
from spec_loop.run import serve_inbox
from spec_loop.service import SpecService


def _service(workspace: Path, reconcile_agent: str = "") -> SpecService:
    ws = Workspace.open(workspace)
    click.echo(restrict_self(ws, "spec").banner("spec-loop"), err=True)
    return SpecService(ws, reconcile_agent=reconcile_agent)


reconcile_agent_option = click.option("--reconcile-agent", default="", metavar="CMD",
                                      help="an agent command that may flag semantic contradictions (JSON answer)")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="banach", message="%(prog)s (banach) %(version)s")
def cli() -> None:
    """spec-loop: takes drafts into canon, the falsifiable specification, one version at a time.

    Nothing else writes canon. Drafts are parsed, validated and reconciled first; a bad one is
    refused with file:line and the reason, and canon does not move.

    Example: spec-loop --help
    """


@cli.command()
@workspace_option
@reconcile_agent_option
@click.pass_context
def once(ctx: click.Context, workspace: Path, reconcile_agent: str) -> None:
    """Take every draft now in the inbox; exit 1 if any was refused.

    Example: spec-loop once --workspace ws
    """
    service = _service(workspace, reconcile_agent)
    decisions = take_inbox(service)
    for notice in service.notices:
        click.echo(notice)
    for decision in decisions:
        click.echo(decision.describe())
    if not decisions:
        click.echo(f"inbox is empty; canon stays at v{service.store.version()}")
    ctx.exit(0 if all(d.accepted for d in decisions) else 1)


@cli.command()
@workspace_option
def run(workspace: Path) -> None:
    """Watch the inbox and take drafts as they land (debounced). Stops cleanly on SIGTERM.

    Example: spec-loop run --workspace ws
    """
    serve_inbox(_service(workspace), echo=click.echo)


@cli.command()
@workspace_option
@click.argument("document", required=False)
def edit(workspace: Path, document: str | None) -> None:
    """Open $EDITOR on a copy of a canon DOCUMENT (or a new one); commit it only once it is valid.

    DOCUMENT is a canon path such as requirements/text.md, or a file name such as text.md.

    Example: EDITOR=nano spec-loop edit text.md
    """
    service = _service(workspace)
    decision = edit_session(service, document, echo=click.echo,
                            reopen=lambda: click.confirm("Re-open the editor with your text?", default=True))
    if decision is not None and not decision.accepted:
        raise click.exceptions.Exit(1)


@cli.command()
@workspace_option
@click.option("--name", help="the draft's file name (default: draft-<time>.md)")
@click.argument("text_or_file")
def add(workspace: Path, text_or_file: str, name: str | None) -> None:
    """Propose a draft from the command line: a FILE's content, '-' for standard input, or the TEXT itself.

    Text that starts with '-' (a '---' header) goes after '--': spec-loop add --name x.md -- "$(cat x.md)".

    Example: spec-loop add drafts/billing.md
    """
    service = _service(workspace)
    path = Path(text_or_file)
    if text_or_file == "-":
        content, draft_name = sys.stdin.buffer.read(), name or f"draft-{time.strftime('%Y%m%d-%H%M%S')}.md"
    elif path.is_file():
        content, draft_name = path.read_bytes(), name or path.name
    else:
        content, draft_name = text_or_file.encode(), name or f"draft-{time.strftime('%Y%m%d-%H%M%S')}.md"
    with service.locked():
        decision = service.decide(Draft(draft_name, target_for(draft_name) or "", content), source="add")
    click.echo(decision.describe())
    if not decision.accepted:
        raise click.exceptions.Exit(1)


@cli.command()
@workspace_option
def check(workspace: Path) -> None:
    """Validate canon as it is; exit 1 on any problem.

    Example: spec-loop check --workspace ws
    """
    problems, version = check_canon(Workspace.open(workspace))
    for problem in problems:
        click.echo(problem)
    if problems:
        raise click.exceptions.Exit(1)
    click.echo(f"canon v{version}: no problems")


@cli.command()
@workspace_option
def log(workspace: Path) -> None:
    """List canon versions with the requirements each added, changed or removed.

    Example: spec-loop log --workspace ws
    """
    from canon.store import CanonStore

    for entry in CanonStore(Workspace.open(workspace).canon).history():
        parts = [f"{label} {', '.join(ids)}" for label, ids in
                 (("added", entry.added), ("changed", entry.changed), ("removed", entry.removed)) if ids]
        click.echo(f"v{entry.version}  {entry.time}  {entry.commit[:10]}  {'; '.join(parts) or entry.summary}")


def main() -> None:
    run_cli(cli, "spec-loop")
