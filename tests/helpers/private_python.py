"""An interpreter installed as pyenv installs one for root: in a folder only root may enter (a home folder of mode
0700), so that a process that has given up root (a turn as uid 65534) cannot read its standard library by path.

The copy is the running interpreter's base prefix, hard-linked where the file system allows (copied where it does
not): the executable, libpython, the standard library without its tests and GUI kits, and the packages Banach runs with
(a venv's, or the base's), so that it runs Banach as installed. Of the .pth files only Banach's own is kept: others may
import threading at start-up (this machine's certifi hook does), which would hide a late import."""
from __future__ import annotations

import os
import shutil
import site
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_SKIPPED = {"site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3"}


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def private_python(parent: Path) -> Path:
    """The copy's executable, made under parent/private (mode 0700; parent/private/python/ itself is 0755, as
    ~/.pyenv/versions/X is under root's home). Made once per parent."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    home = parent / "private"
    prefix = home / "python"
    executable = prefix / "bin" / version
    if executable.exists():
        return executable
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(home, 0o700)
    base = Path(sys.base_prefix)
    (prefix / "bin").mkdir(parents=True)
    _link_or_copy(os.path.realpath(sys._base_executable), str(executable))  # type: ignore[attr-defined]
    library = sysconfig.get_config_var("LDLIBRARY")
    if sysconfig.get_config_var("Py_ENABLE_SHARED") and library:
        (prefix / "lib").mkdir(exist_ok=True)
        for found in (base / "lib").glob(library + "*"):
            _link_or_copy(str(found), str(prefix / "lib" / found.name))
    stdlib = Path(sysconfig.get_paths(vars={"installed_base": str(base), "base": str(base)})["stdlib"])
    shutil.copytree(stdlib, prefix / "lib" / version, copy_function=_link_or_copy,
                    ignore=lambda folder, names: [n for n in names if n in _SKIPPED])
    packages = prefix / "lib" / version / "site-packages"
    packages.mkdir()
    for source in site.getsitepackages():  # a venv's own, when Banach runs in one
        shutil.copytree(source, packages, copy_function=_link_or_copy, dirs_exist_ok=True, ignore=_other_pth)
    if not any(packages.glob("*banach*")):  # a checkout used without installing it
        (packages / "banach.pth").write_text(f"{ROOT}\n")
    return executable


def _other_pth(folder: str, names: list[str]) -> list[str]:
    return [name for name in names if name.endswith(".pth") and "banach" not in name]
