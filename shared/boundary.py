"""The one place errors become exit codes: BanachError is `Error: ...` and 1; Ctrl-C is 130;
anything else writes a crash report into the state dir and exits 3."""
from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import click

from shared.errors import BanachError

WORKSPACE_KEY = "banach.workspace"  # in the click context's meta, which every context of one invocation shares
VERBOSE_KEY = "banach.verbose"


def find_workspace() -> str:
    """-w given before the subcommand (as git -C), else $BANACH_WORKSPACE, else the nearest folder from here upwards
    that holds banach.toml (as git finds its repository), else the current directory."""
    context = click.get_current_context(silent=True)
    if context is not None and context.meta.get(WORKSPACE_KEY):
        return str(context.meta[WORKSPACE_KEY])
    if os.environ.get("BANACH_WORKSPACE"):
        return os.environ["BANACH_WORKSPACE"]
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / "banach.toml").is_file():
            return str(folder)
    return "."


workspace_option = click.option(
    "--workspace", "-w", "workspace", type=click.Path(file_okay=False, path_type=Path),
    default=find_workspace, show_default="the nearest folder upwards holding banach.toml",
    help="the Banach workspace (the folder holding banach.toml)",
)


def _remember(key: str) -> Callable[[click.Context, click.Parameter, object], object]:
    def callback(ctx: click.Context, param: click.Parameter, value: object) -> object:
        if value:
            ctx.meta[key] = value
        return value
    return callback


def program_options(group: Callable[..., object]) -> Callable[..., object]:
    """The options a program takes before its subcommand: -w (the workspace, for the subcommand) and -v."""
    group = click.option("--workspace", "-w", type=click.Path(file_okay=False, path_type=Path), default=None,
                         expose_value=False, is_eager=True, callback=_remember(WORKSPACE_KEY),
                         help="the workspace, for the command after it (as git -C; or give -w after the command)")(group)
    return click.option("--verbose", "-v", is_flag=True, expose_value=False, callback=_remember(VERBOSE_KEY),
                        help="also print each loop's isolation banner (what it may write) as it starts")(group)


def verbose() -> bool:
    context = click.get_current_context(silent=True)
    return bool(context is not None and context.meta.get(VERBOSE_KEY))


def startup_line(line: str) -> None:
    """A loop's start-up line about its isolation: printed once, by the daemon ('run'), with -v, or when it warns;
    `banach doctor` shows the same for every role."""
    context = click.get_current_context(silent=True)
    daemon = context is not None and context.info_name == "run"
    if daemon or verbose() or "WARNING" in line or "NO run cgroups" in line:
        click.echo(line, err=True)


def _versions() -> str:
    """What a bug report needs first: every version the behaviour depends on."""
    import platform
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    from shared.isolation.sandbox import landlock_abi

    def safely(read: Callable[[], str]) -> str:
        try:
            return read()
        except (OSError, PackageNotFoundError, subprocess.SubprocessError) as exc:
            return f"unknown ({exc})"

    git = safely(lambda: subprocess.run(["git", "--version"], capture_output=True, text=True, timeout=10).stdout.strip())
    return "\n".join([f"banach {safely(lambda: version('banach'))}", f"python {sys.version.split()[0]} ({sys.executable})",
                      f"git {git.removeprefix('git version ')}", f"kernel {platform.system()} {platform.release()}",
                      f"landlock ABI {safely(lambda: str(landlock_abi()))}"])


def _crash_report(program: str) -> Path | None:
    workspace = None
    for index, arg in enumerate(sys.argv):
        if arg in ("--workspace", "-w") and index + 1 < len(sys.argv):
            workspace = Path(sys.argv[index + 1])
        elif arg.startswith("--workspace="):
            workspace = Path(arg.split("=", 1)[1])
    state = (workspace or Path(os.environ.get("BANACH_WORKSPACE", "."))) / "state"
    folder = state if state.is_dir() else Path(os.environ.get("TMPDIR", "/tmp"))
    path = folder / f"crash-{program}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
    try:
        path.write_text(f"{program} {' '.join(sys.argv[1:])}\n\n{_versions()}\n\n{traceback.format_exc()}")
        return path
    except OSError:
        return None


def run_cli(group: Callable[..., object], program: str) -> None:
    try:
        # with standalone_mode off, click returns the code of ctx.exit(N) instead of exiting
        code = group(standalone_mode=False, prog_name=program)  # type: ignore[call-arg]
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BanachError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except SystemExit:
        raise
    except BaseException:
        report = _crash_report(program)
        where = f"; a crash report is in {report}" if report else f":\n{traceback.format_exc()}"
        click.echo(f"{program} crashed: this is a bug in Banach{where}", err=True)
        sys.exit(3)
    sys.exit(code if isinstance(code, int) else 0)
