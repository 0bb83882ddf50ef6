"""Toolchains as a person has them: a version manager's shim is not the toolchain, only a script that finds it.

pyenv, rbenv, nodenv, goenv, asdf and mise put a `shims/` folder first on PATH; each program there execs the
manager (`.pyenv/libexec/pyenv`) which picks a version under the manager's root (`.pyenv/versions/3.11.7`). A view
that holds the shim alone fails every turn with exit 127. So a shim's manager root is read whole (read-only), and
so is a pipx venv's interpreter's (a venv made from a shim names the shims folder as its home).

    manager_root(Path("/home/me/.pyenv/shims/python3"))  -> /home/me/.pyenv
    missing_folder(output)  -> the folder a failed run named as missing, for `banach doctor`'s advice"""
from __future__ import annotations

import re
from pathlib import Path

SHIMS = "shims"
_MISSING = re.compile(r"(/[^\s:'\"]+): (?:No such file or directory|not found)")


def manager_root(path: Path) -> Path | None:
    """The version manager's root when path is one of its shims (or its shims folder), else None."""
    for folder in (path, *path.parents):
        if folder.name == SHIMS and folder.parent != folder:
            return folder.parent
    return None


def missing_folder(output: str) -> Path | None:
    """The folder to add to a view for a path a run said is missing: a shim manager's root when the path is inside
    one (its shims folder beside it), else the deepest folder of the path that exists on this machine."""
    match = _MISSING.search(output)
    if match is None:
        return None
    path = Path(match.group(1))
    for folder in path.parents:
        if (folder / SHIMS).is_dir():
            return folder
    return next((folder for folder in (path, *path.parents) if folder.is_dir() and folder != Path("/")), None)
