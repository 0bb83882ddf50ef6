"""spec-loop: the only writer of canon."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TextIO

import click

from shared import lifeline, role_lock
from shared.boundary import program_options, run_cli, startup_line, workspace_option
from shared.daemon import Stopper
from shared.isolation.policy import restrict_self
from shared.workspace import Workspace
from spec_loop.checks import check_canon
from spec_loop.draft import Draft, target_for
from spec_loop.edit import edit as edit_session
from spec_loop.edit import edit_text
from spec_loop.from_code import code_drafts
from spec_loop.intake import take_inbox
from spec_loop.run import serve_inbox
from spec_loop.service import SpecService


def drafts_from_arguments(arguments: tuple[str, ...], name: str | None) -> list[Draft]:
    """The drafts `spec-loop add` was given: files, '-' for standard input, or one text."""
    if len(arguments) == 1 and not Path(arguments[0]).is_file():
        draft_name = name or f"draft-{time.strftime('%Y%m%d-%H%M%S')}.md"
        content = sys.stdin.buffer.read() if arguments[0] == "-" else arguments[0].encode()
        return [Draft(draft_name, target_for(draft_name) or "", content)]
    if name is not None and len(arguments) > 1:
        raise click.UsageError("--name names one draft; several files keep their own names")
    drafts = []
    for argument in arguments:
        path = Path(argument)
        if not path.is_file():
            raise click.UsageError(f"{argument}: no such file; with several drafts, each must be a file")
        canon_path = path.parts[0] in ("requirements", "tests", "sealed") and len(path.parts) > 1
        draft_name = name or (path.as_posix() if canon_path else path.name)
        drafts.append(Draft(draft_name, target_for(draft_name) or "", path.read_bytes()))
    return drafts


def _service(workspace: Path, reconcile_agent: str = "", *, command: str = "") -> SpecService:
    """command: `once` or `run`, which are spec's one process of the workspace (shared/role_lock.py); a person's
    edit or add is a change beside them, serialized with intake by spec's canon lock."""
    ws = Workspace.open(workspace)
    if command:
        role_lock.claim(ws, "spec", f"spec-loop {command}")
    startup_line(restrict_self(ws, "spec").banner("spec-loop"))
    return SpecService(ws, reconcile_agent=reconcile_agent)


reconcile_agent_option = click.option("--reconcile-agent", default="", metavar="CMD",
                                      help="an agent command that may flag semantic contradictions (JSON answer)")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="banach", message="%(prog)s (banach) %(version)s")
@program_options
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
    """Take every draft now in the inbox as one change (one version, or nothing); exit 1 if refused.

    Example: spec-loop once --workspace ws
    """
    service = _service(workspace, reconcile_agent, command="once")
    decision = take_inbox(service)
    for notice in service.notices:
        click.echo(notice)
    if decision is None:
        click.echo(f"inbox is empty; canon stays at v{service.store.version()}")
    else:
        click.echo(decision.describe())
    ctx.exit(0 if decision is None or decision.accepted else 1)


@cli.command()
@workspace_option
def run(workspace: Path) -> None:
    """Watch the inbox and take drafts as they land (debounced). Stops cleanly on SIGTERM.

    Example: spec-loop run --workspace ws
    """
    stopper = Stopper().install()
    service = _service(workspace, command="run")
    watching = lifeline.watch(service.ws, stopper.stop)
    if watching:
        click.echo(f"spec-loop: {watching}", err=True)
    serve_inbox(service, echo=click.echo, stopper=stopper)


@cli.command()
@workspace_option
@click.argument("document", required=False)
@click.option("--text-from", type=click.File("r", encoding="utf-8"), default=None, metavar="FILE",
              help="take the document's new text from FILE ('-': standard input) instead of an editor; the same "
                   "checks, exit 1 if refused (the dashboard saves a document this way)")
def edit(workspace: Path, document: str | None, text_from: TextIO | None) -> None:
    """Open $EDITOR on a copy of a canon DOCUMENT (or a new one); commit it only once it is valid.

    DOCUMENT is a canon path such as requirements/text.md, or a file name such as text.md.

    Example: EDITOR=nano spec-loop edit text.md   (or: spec-loop edit text.md --text-from new.md)
    """
    service = _service(workspace)
    if text_from is not None:
        if document is None:
            raise click.UsageError("--text-from needs the DOCUMENT it replaces, such as requirements/text.md")
        decision = edit_text(service, document, text_from.read(), echo=click.echo)
    else:
        decision = edit_session(service, document, echo=click.echo,
                                reopen=lambda: click.confirm("Re-open the editor with your text?", default=True))
    if decision is not None and not decision.accepted:
        raise click.exceptions.Exit(1)


@cli.command()
@workspace_option
@click.option("--name", help="the draft's file name, for one TEXT or '-' (default: draft-<time>.md)")
@click.option("--from-code", "from_code", multiple=True, metavar="PATH",
              help="a file of the project's test set-up, taken from the code's current commit: a conftest.py or "
                   "file under tests/ (same path in canon), or pyproject.toml, setup.cfg, tox.ini or pytest.ini "
                   "(its pytest options become canon's pytest.ini)")
@click.option("--plugin", "plugins", multiple=True, metavar="NAME",
              help="a pytest plugin of the project's environment that conformance runs load (-p NAME in canon's "
                   "pytest.ini); no plugin loads otherwise")
@click.argument("drafts", nargs=-1, metavar="FILE_OR_TEXT...")
def add(workspace: Path, drafts: tuple[str, ...], name: str | None, from_code: tuple[str, ...],
        plugins: tuple[str, ...]) -> None:
    """Propose a change from the command line: FILEs (a requirement document and the conformance tests it
    names, taken together as one version), '-' for standard input, or one TEXT itself.

    A FILE lands by its name (billing.md as requirements/billing.md, test_bill.py in tests/); one given as
    tests/... or requirements/... keeps that path. Text that starts with '-' (a '---' header) goes after
    '--': spec-loop add --name x.md -- "$(cat x.md)". The project's own test set-up (fixtures of its
    conftest.py, its pytest options, its pytest plugins) is canon's only when it is brought in, with
    --from-code and --plugin, in the same change or a later one.

    Example: spec-loop add billing.md test_billing.py --from-code tests/conftest.py
    """
    if not drafts and not from_code and not plugins:
        raise click.UsageError("give the FILEs of the change, or --from-code PATH, or --plugin NAME")
    service = _service(workspace)
    change = drafts_from_arguments(drafts, name) if drafts else []
    change = code_drafts(service.ws, from_code, plugins, change, service.store)
    with service.locked():
        decision = service.decide_change(change, source="add")
    for notice in service.notices:
        click.echo(notice)
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
    """List canon versions with the requirements each added, changed or removed, and its conformance tests.

    Example: spec-loop log --workspace ws
    """
    from canon.store import CanonStore

    for entry in CanonStore(Workspace.open(workspace).canon).history():
        parts = [f"{label} {', '.join(ids)}" for label, ids in
                 (("added", entry.added), ("changed", entry.changed), ("removed", entry.removed),
                  ("conformance tests", entry.tests)) if ids]
        click.echo(f"v{entry.version}  {entry.time}  {entry.commit[:10]}  {'; '.join(parts) or entry.summary}")


def main() -> None:
    run_cli(cli, "spec-loop")
