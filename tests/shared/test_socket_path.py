"""A unix socket in a folder of any depth: bound and reached through a short link, the file still in the folder."""
from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from shared.errors import BanachError
from shared.socket_path import address, forget, runtime_folder


def deep_folder(tmp_path: Path) -> Path:
    folder = tmp_path / ("d" * 60) / ("e" * 60)
    folder.mkdir(parents=True)
    return folder


def test_a_path_that_fits_is_used_as_it_is(tmp_path: Path) -> None:
    assert address(tmp_path, "x.sock") == tmp_path / "x.sock"


def test_a_deep_folder_gets_a_short_address_whose_socket_file_is_in_the_folder(tmp_path: Path) -> None:
    run = Path(os.environ["XDG_RUNTIME_DIR"])  # the test's own (tests/conftest.py)
    folder = deep_folder(tmp_path)
    with socket.socket(socket.AF_UNIX) as server, pytest.raises(OSError, match="too long"):
        server.bind(str(folder / "x.sock"))  # what a deep workspace got before
    bound = address(folder, "x.sock")
    assert len(os.fsencode(bound)) < 90 and bound.parent.parent == run / "banach"
    with socket.socket(socket.AF_UNIX) as server, socket.socket(socket.AF_UNIX) as client:
        server.bind(str(bound))
        server.listen()
        client.connect(str(address(folder, "x.sock")))  # a second caller finds the same link
        assert stat.S_ISSOCK((folder / "x.sock").stat().st_mode)
    assert stat.S_IMODE((run / "banach").stat().st_mode) == 0o700


def test_a_runtime_folder_too_deep_for_the_address_is_passed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep_folder(tmp_path)))
    assert runtime_folder(30) == Path("/tmp") / f"banach-{os.getuid()}"
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "missing"))
    assert runtime_folder() == Path("/tmp") / f"banach-{os.getuid()}"


def test_a_link_pointing_elsewhere_is_repaired(tmp_path: Path) -> None:
    folder = deep_folder(tmp_path)
    link = address(folder, "x.sock").parent
    link.unlink()
    link.symlink_to(tmp_path)  # stale: a workspace removed and another made in its place, say
    assert address(folder, "x.sock").parent.resolve() == folder.resolve()


def test_a_runtime_folder_others_may_enter_is_refused() -> None:
    run = Path(os.environ["XDG_RUNTIME_DIR"])
    (run / "banach").mkdir()
    (run / "banach").chmod(0o755)
    with pytest.raises(BanachError, match=r"banach holds Banach's short socket links.*mode 0700"):
        runtime_folder()


def test_a_runtime_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    run = Path(os.environ["XDG_RUNTIME_DIR"])
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (run / "banach").symlink_to(tmp_path / "elsewhere")  # planted by someone who can write the parent
    with pytest.raises(BanachError, match="no one else"):
        runtime_folder()


def test_forget_removes_the_link_and_only_its_own(tmp_path: Path) -> None:
    folder, other = deep_folder(tmp_path), deep_folder(tmp_path / "other")
    link, kept = address(folder, "x.sock").parent, address(other, "x.sock").parent
    forget(folder, "x.sock")
    assert not link.is_symlink() and kept.is_symlink()
    forget(folder, "x.sock")  # nothing left to remove: no error
    forget(tmp_path, "x.sock")  # a folder that never needed a link
