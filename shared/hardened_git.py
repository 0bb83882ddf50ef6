"""Git under one hardened configuration: nothing the repository or the work tree says is executed or honoured
as settings. No system or global config, no hooks, no fsmonitor, no attributes from the tree (drivers, filters, eol
and export rules are unset by our own info/attributes, which outranks .gitattributes), no pager, no prompts, no
replace refs, no optional locks, and a time limit. Every git child Banach starts gets this environment
(shared/git.py's GitRepo, and the few callers that stream through git themselves)."""
from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from shared.errors import GitError

GIT_TIMEOUT = 300.0  # seconds for one git command; a repository that needs longer is not one we can govern

# Command-line scope (GIT_CONFIG_COUNT): outranks every config file, including the repository's own.
HARDENED_CONFIG: tuple[tuple[str, str], ...] = (
    ("safe.directory", "*"),  # stores may be owned by another role's account (users backend)
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "false"),
    ("core.attributesFile", "/dev/null"),
    ("core.excludesFile", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("core.symlinks", "true"),
    ("core.trustctime", "true"),
    ("core.checkStat", "default"),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.sparseCheckout", "false"),
    ("core.splitIndex", "false"),
    ("core.worktree", ""),
    ("diff.external", ""),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("color.ui", "false"),
    ("submodule.recurse", "false"),
    ("protocol.allow", "never"),
    ("protocol.file.allow", "always"),
    ("uploadpack.packObjectsHook", ""),
    ("init.templateDir", ""),
    ("advice.detachedHead", "false"),
    ("feature.manyFiles", "false"),
    ("index.skipHash", "false"),
    ("extensions.worktreeConfig", "false"),
)
# Every attribute that makes git run or transform something, unset ahead of anything in the tree.
NEUTRAL_ATTRIBUTES = "* !text !eol !crlf !filter !diff !merge !ident !working-tree-encoding !export-subst !export-ignore\n"
_SCRUBBED_PREFIXES = ("GIT_",)


def hardened_env(*, git_dir: Path, work_tree: Path | None = None, index_file: Path | None = None,
                 extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a git child: nothing inherited that git reads (GIT_*), plus our config."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(_SCRUBBED_PREFIXES)}
    env.update({
        "GIT_DIR": str(git_dir),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_SYSTEM": "/dev/null",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_LITERAL_PATHSPECS": "1",
        "GIT_CEILING_DIRECTORIES": "/",
        "GIT_TEMPLATE_DIR": "",
        "GIT_PROTOCOL_FROM_USER": "0",
        "LC_ALL": "C",
        "LANGUAGE": "C",
        "GIT_CONFIG_COUNT": str(len(HARDENED_CONFIG)),
    })
    for index, (key, value) in enumerate(HARDENED_CONFIG):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    if work_tree is not None:
        env["GIT_WORK_TREE"] = str(work_tree)
    if index_file is not None:
        env["GIT_INDEX_FILE"] = str(index_file)
    env.update(extra or {})
    return env


def hardened_command(args: list[str] | tuple[str, ...], *, git_dir: Path, work_tree: Path | None = None,
                     cwd: Path | None = None, input: bytes | None = None, index_file: Path | None = None,
                     extra_env: Mapping[str, str] | None = None,
                     timeout: float = GIT_TIMEOUT) -> subprocess.CompletedProcess[bytes]:
    """Run one git command under the hardened configuration. Git is the one child Banach trusts to
    leave no processes behind (no hooks, helpers or pagers can start), so it runs without the reaper."""
    env = hardened_env(git_dir=git_dir, work_tree=work_tree, index_file=index_file, extra=extra_env)
    argv = ["git", "--no-pager", "--no-replace-objects", *args]
    try:
        return subprocess.run(argv, cwd=cwd or work_tree or git_dir, env=env, input=input, capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} took longer than {timeout:g}s in {work_tree or git_dir}; stopped it") from None
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}. Install git and put it on PATH.") from None


def protect_git_dir(git_dir: Path) -> None:
    """Our own info/attributes: unset every attribute that would make git run or rewrite something."""
    info = git_dir / "info"
    info.mkdir(parents=True, exist_ok=True)
    target = info / "attributes"
    if not target.exists() or target.read_text() != NEUTRAL_ATTRIBUTES:
        target.write_text(NEUTRAL_ATTRIBUTES)


CONTROL_FILES = ("config", "info/attributes", "info/exclude", "objects/info/alternates", "commondir", "shallow")


def control_files(git_dir: Path) -> dict[str, bytes | None]:
    """The git directory's files that steer git, as they are now (None: absent)."""
    found: dict[str, bytes | None] = {}
    for name in CONTROL_FILES:
        try:
            found[name] = (git_dir / name).read_bytes()
        except OSError:
            found[name] = None
    return found


def restore_control_files(git_dir: Path, saved: dict[str, bytes | None]) -> list[str]:
    """Put the control files back as saved; returns the ones that had changed."""
    changed = []
    for name, content in saved.items():
        path = git_dir / name
        try:
            current: bytes | None = path.read_bytes()
        except OSError:
            current = None
        if current == content:
            continue
        changed.append(name)
        if content is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    return changed
