"""What a confined turn may read: the toolchains its command line runs, found from that command line, besides the
system folders, Banach's own interpreter and packages, and what the caller names (canon, the prompt, the project's
environment, `isolation.read_paths`). Never a folder that holds the operator's HOME or the workspace."""
from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path

from shared.isolation.shims import manager_root
from shared.isolation.view import SYSTEM_FOLDERS

BANACH_PACKAGES = ("shared", "build_loop", "plan_loop", "spec_loop", "canon")


def install_roots(program: Path) -> list[Path]:
    """The folder a program's install lives in: a virtualenv (and the interpreter it was made from), an npm prefix,
    the prefix above a bin folder, or else the program's own folder."""
    roots: list[Path] = []
    for path in dict.fromkeys((program, program.resolve())):
        ancestors = list(path.parents)
        venv = next((folder for folder in ancestors if (folder / "pyvenv.cfg").is_file()), None)
        modules = [folder for folder in ancestors if folder.name == "node_modules"]
        if venv is not None:
            roots.append(venv)
            home = _venv_home(venv / "pyvenv.cfg")
            if home is not None:
                roots.append(home)
        elif modules:
            roots.append(modules[-1].parent)  # the outermost: the npm prefix
        elif path.parent.name == "bin":  # a prefix: its programs and libraries, not its share/ or etc/
            prefix = path.parent.parent
            roots += [folder for folder in (prefix / "bin", prefix / "lib", prefix / "lib64") if folder.is_dir()]
        else:
            roots.append(path.parent)
    return roots


def _venv_home(cfg: Path) -> Path | None:
    for line in cfg.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return Path(value.strip()).resolve().parent
    return None


def _shebang(program: Path) -> str:
    try:
        with open(program, "rb") as file:
            first = file.readline(256)
    except OSError:
        return ""
    if not first.startswith(b"#!"):
        return ""
    words = first[2:].decode(errors="replace").split()
    if words[:1] == ["/usr/bin/env"] and len(words) > 1:
        return words[-1] if words[1] == "-S" and len(words) > 2 else words[1]
    return words[0] if words else ""


def toolchain(argv: tuple[str, ...], path_variable: str, forbidden: list[Path]) -> list[Path]:
    """Read-only folders for running argv: its program's install, the interpreter its first line names, node, the
    folder of each file the command line names, a version manager's root for a shim among them
    (shared/isolation/shims.py); Banach's interpreter and packages. A folder that holds one of
    `forbidden` (the HOME, the workspace) is narrowed to the file itself."""
    found: list[Path] = [Path(sys.prefix), Path(sys.base_prefix), *_own_libraries()]
    for name in BANACH_PACKAGES:
        module = importlib.import_module(name)
        found.append(Path(module.__file__ or "").parent)
    files: list[Path] = []
    program = shutil.which(argv[0], path=path_variable) if argv else None
    if program:
        files.append(Path(program))
        interpreter = _shebang(Path(program))
        located = shutil.which(interpreter, path=path_variable) if interpreter else None
        if located:
            files.append(Path(located))
    node = shutil.which("node", path=path_variable)
    if node:
        files.append(Path(node))
    files += [Path(arg) for arg in argv[1:] if arg.startswith("/") and os.path.isfile(arg)]
    for file in files:
        for root in install_roots(file):
            found.append(file if any(_holds(root, kept) for kept in forbidden) else root)
            manager = manager_root(root) or manager_root(file)  # a shim: the manager and what it runs, whole
            if manager is not None and not any(_holds(manager, kept) for kept in forbidden):
                found.append(manager)
    system = [Path(folder) for folder in SYSTEM_FOLDERS]
    return [path for path in dict.fromkeys(p.resolve() for p in found if p.exists())
            if not any(_holds(folder, path) for folder in system)]


def _own_libraries() -> list[Path]:
    """The folders of the shared libraries this interpreter runs on that lie outside the system folders: its libpython
    when its build found it by an RPATH elsewhere (a copied or relocated interpreter), which in a view without that
    folder would quietly be the system's own libpython, with another site.py."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {line.split(None, 5)[5].strip() for line in maps if line.count(" ") >= 5 and "/libpython" in line}
    except (OSError, IndexError):
        return []
    return sorted({Path(path).parent for path in paths if path.startswith("/") and not path.startswith(SYSTEM_FOLDERS)})


def _holds(folder: Path, path: Path) -> bool:
    return path == folder or folder in path.parents
