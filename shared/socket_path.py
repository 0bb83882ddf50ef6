"""A unix socket address for a folder at any depth.

A socket's address holds 107 bytes, and a workspace under a deep folder goes past that: bind() and connect()
then fail with "AF_UNIX path too long". The socket file itself can still live in the workspace: its folder is
reached through a short link in a private runtime folder ($XDG_RUNTIME_DIR/banach, else /tmp/banach-UID, made
0700 and refused unless this user owns it and no one else may enter it), named by a digest of the folder's real
path. Both addresses name the same socket file, so whoever looks for it in the workspace still finds it.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path

from shared.errors import BanachError

FITS = 90  # bytes: sun_path holds 107 and a NUL, and supervisord binds "<path>.<pid>" first


def address(folder: Path, name: str) -> Path:
    """Where to bind or connect to the socket `name` in `folder`: the path itself when it fits, else a short one."""
    direct = folder / name
    if len(os.fsencode(direct)) < FITS:
        return direct
    return short_link(folder, name) / name


def short_link(folder: Path, name: str) -> Path:
    """A short path that is `folder`: a link in the private runtime folder, made or repaired as needed."""
    target = folder.resolve()
    link = _link_for(target, name)
    if _points_to(link, target):
        return link
    temporary = link.with_name(f".{link.name}.{os.getpid()}")
    temporary.unlink(missing_ok=True)
    os.symlink(target, temporary)
    os.replace(temporary, link)  # atomic: a concurrent caller sees the old link or the new one
    return link


def forget(folder: Path, name: str) -> None:
    """Remove the short link made for `folder`, if there is one (when its socket is gone for good)."""
    if len(os.fsencode(folder / name)) < FITS:
        return
    target = folder.resolve()
    link = _link_for(target, name)
    if _points_to(link, target):
        with contextlib.suppress(FileNotFoundError):
            link.unlink()


def _points_to(link: Path, target: Path) -> bool:
    try:
        return Path(os.readlink(link)) == target
    except OSError:  # missing, or not a link
        return False


def _link_for(target: Path, name: str) -> Path:
    return runtime_folder(len(os.fsencode(name)) + 18) / hashlib.sha256(os.fsencode(target)).hexdigest()[:16]


def runtime_folder(room: int = 0) -> Path:
    """$XDG_RUNTIME_DIR/banach when that exists and leaves `room` bytes within FITS, else /tmp/banach-UID."""
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    folder = Path("/tmp") / f"banach-{os.getuid()}"
    if base and Path(base).is_absolute() and Path(base).is_dir() and len(os.fsencode(base)) + len("/banach") + room < FITS:
        folder = Path(base) / "banach"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise BanachError(f"{folder} holds Banach's short socket links, and must be a folder of this user that no one else "
                          f"may enter (mode 0700); it is not. Remove it (or set XDG_RUNTIME_DIR), or move the workspace "
                          f"to a shorter path")
    return folder
