"""A commit's files, copied out of the object database into a fresh, read-only folder.

No `git archive` (it honours export-ignore and export-subst from the tree), no checkout (attributes,
filters, hooks), no index: `git ls-tree` lists modes and ids, one `git cat-file --batch` streams the
blobs, and this module writes them. Everything the tree says is data: paths that are absolute, contain
`..` or a `.git` component are refused, links that leave the tree are not created, gitlinks (submodules)
are skipped, and the whole copy is bounded in bytes and files. Both git children run under the hardened
configuration of shared.git and are killed when the time limit passes.
"""
from __future__ import annotations

import os
import posixpath
import shutil
import stat
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from shared.errors import ExportError
from shared.git import GIT_TIMEOUT, GitRepo, hardened_env

DEFAULT_MAX_BYTES = 2 * 1024**3
DEFAULT_MAX_FILES = 200_000
MAX_PATH_BYTES = 4096  # Linux's PATH_MAX; a longer path cannot be written anyway
MAX_LINK_BYTES = 4095
_CHUNK = 1 << 16


@dataclass(frozen=True)
class RefusedLink:
    path: str
    target: str
    reason: str


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote, and what of the tree it did not."""

    files: int  # regular files written
    bytes: int  # their size
    links: int = 0  # links made (each stays inside the tree)
    refused_links: tuple[RefusedLink, ...] = ()
    skipped_gitlinks: tuple[str, ...] = ()
    refused_paths: tuple[str, ...] = ()

    def as_record(self) -> dict[str, object]:
        return {"files": self.files, "bytes": self.bytes, "links": self.links,
                "refused_links": [{"path": r.path, "target": r.target, "reason": r.reason} for r in self.refused_links],
                "skipped_gitlinks": list(self.skipped_gitlinks), "refused_paths": list(self.refused_paths)}


@dataclass(frozen=True)
class _Entry:
    mode: str
    kind: str
    oid: str
    size: int
    path: str


def export_commit(repo: GitRepo, rev: str, destination: Path, *, max_bytes: int = DEFAULT_MAX_BYTES,
                  max_files: int = DEFAULT_MAX_FILES, timeout: float = GIT_TIMEOUT,
                  leave_out: tuple[str, ...] = ()) -> ExportReport:
    """Write the files of rev (a commit, or a tree's id) into destination (which must not exist yet)
    and make it read-only; nothing below the folders in leave_out is written (canon without its held-back tests).
    Raises ExportError (and leaves nothing behind) when the tree cannot be copied within the limits."""
    if destination.exists() or destination.is_symlink():
        raise ExportError(f"cannot export {rev[:12]} into {destination}: it already exists; exports go into a new folder")
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.mkdir()
    except OSError as exc:
        raise ExportError(f"cannot create {destination} for the export of {rev[:12]}: {exc}") from None
    try:
        with _Git(repo, timeout) as git:
            return _export(git, repo, rev, destination, max_bytes, max_files, leave_out)
    except OSError as exc:
        remove_tree(destination)
        raise ExportError(f"cannot write the export of {rev[:12]} into {destination}: {exc}") from None
    except BaseException:
        remove_tree(destination)
        raise


def _export(git: _Git, repo: GitRepo, rev: str, root: Path, max_bytes: int, max_files: int,
            leave_out: tuple[str, ...] = ()) -> ExportReport:
    where = f"commit {rev[:12]} of {repo.git_dir}"
    files: list[_Entry] = []
    links: list[_Entry] = []
    gitlinks: list[str] = []
    refused_paths: list[str] = []
    declared = 0
    for count, entry in enumerate(git.tree(rev, where), start=1):
        if any(entry.path.startswith(folder.rstrip("/") + "/") for folder in leave_out):
            continue
        if count > max_files:
            raise ExportError(f"{where} has more than {max_files} files; plan does not measure it. Raise "
                              "plan.export_max_files in banach.toml if the project is really that large.")
        if _bad_path(entry.path):
            refused_paths.append(entry.path)
        elif entry.mode == "160000":
            gitlinks.append(entry.path)
        elif entry.kind != "blob" or not entry.mode.startswith(("100", "120")):
            raise ExportError(f"{where} has an entry git does not write as a file: {entry.mode} {entry.kind} {entry.path!r}")
        else:
            declared += entry.size
            if declared > max_bytes:
                raise ExportError(f"{where} holds more than {max_bytes} bytes of files; plan does not measure it. "
                                  "Raise plan.export_max_bytes in banach.toml if the project is really that large.")
            (links if entry.mode == "120000" else files).append(entry)
    directories = {root}
    written = 0
    for entry in files:
        target = _make_parents(root, entry.path, directories)
        written += git.write_blob(entry.oid, entry.size, target, executable=bool(int(entry.mode, 8) & 0o100), where=where)
    refused_links = _make_links(git, root, links, directories, where)
    for folder in sorted(directories, key=lambda p: len(p.parts), reverse=True):
        os.chmod(folder, 0o555)
    return ExportReport(len(files), written, len(links) - len(refused_links), tuple(refused_links), tuple(gitlinks),
                        tuple(refused_paths))


def _bad_path(path: str) -> bool:
    if path.startswith("/") or len(os.fsencode(path)) > MAX_PATH_BYTES:
        return True
    return any(part in ("", ".", "..") or part.casefold() == ".git" for part in path.split("/"))


def _make_parents(root: Path, path: str, directories: set[Path]) -> Path:
    folder = root
    for part in path.split("/")[:-1]:
        folder = folder / part
        if folder not in directories:
            os.mkdir(folder, 0o755)  # fails on a file of the same name: a malformed tree, reported as such
            directories.add(folder)
    return root / path


def _make_links(git: _Git, root: Path, links: list[_Entry], directories: set[Path], where: str) -> list[RefusedLink]:
    """Links come last, after every file: no file is ever written through one. A link is made only when
    its target stays inside the tree, judged by its text and again by the file system once all exist."""
    refused: list[RefusedLink] = []
    made: dict[Path, _Entry] = {}
    for entry in links:
        raw = git.read_blob(entry.oid, MAX_LINK_BYTES, where)
        target = os.fsdecode(raw)
        reason = _link_reason(entry.path, raw)
        if reason:
            refused.append(RefusedLink(entry.path, target, reason))
            continue
        place = _make_parents(root, entry.path, directories)
        os.symlink(target, place)
        made[place] = entry
    real_root = os.path.realpath(root)
    while True:  # a link through other links can leave the tree though its own text stays inside
        escaping = [place for place in made if not _inside(os.path.realpath(place), real_root)]
        if not escaping:
            return refused
        for place in escaping:
            entry = made.pop(place)
            target = os.readlink(place)
            os.unlink(place)
            refused.append(RefusedLink(entry.path, target, "resolves outside the tree through other links"))


def _link_reason(path: str, raw: bytes) -> str:
    if not raw or b"\0" in raw or len(raw) > MAX_LINK_BYTES:
        return "not a usable link target"
    target = os.fsdecode(raw)
    if target.startswith("/"):
        return "absolute target"
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if resolved == ".." or resolved.startswith("../"):
        return "target outside the tree"
    return ""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class _Git:
    """The two git children of one export, killed together on the time limit, on an error, or at the end."""

    def __init__(self, repo: GitRepo, timeout: float) -> None:
        self.repo = repo
        self.timeout = timeout
        self.children: list[subprocess.Popen[bytes]] = []
        self.timer = threading.Timer(timeout, self._expire)
        self.expired = False
        self._batch: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> _Git:
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()
        self._kill()
        for child in self.children:
            child.wait()
            for stream in (child.stdin, child.stdout, child.stderr):
                if stream is not None:
                    stream.close()

    def _expire(self) -> None:
        self.expired = True
        self._kill()

    def _kill(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.kill()

    def _start(self, *args: str, stdin: bool = False) -> subprocess.Popen[bytes]:
        env = hardened_env(git_dir=self.repo.git_dir)
        try:
            child = subprocess.Popen(["git", "--no-pager", "--no-replace-objects", *args], cwd=self.repo.git_dir,
                                     env=env, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as exc:
            raise ExportError(f"cannot run git: {exc}. Install git and put it on PATH.") from None
        self.children.append(child)
        return child

    def _failed(self, child: subprocess.Popen[bytes], where: str) -> ExportError:
        if self.expired:
            return ExportError(f"exporting {where} took longer than {self.timeout:g}s; stopped it")
        if child.poll() is None:
            child.kill()
        child.wait()
        stderr = child.stderr.read().decode(errors="replace").strip() if child.stderr else ""
        return ExportError(f"cannot read {where}: git exited {child.returncode}: {stderr or 'no message'}. "
                           "The repository may be missing objects or be corrupt; `git fsck` in it says more.")

    def tree(self, rev: str, where: str) -> Iterator[_Entry]:
        """Every entry of the commit's tree, streamed: a huge tree stops at the file limit, not in memory."""
        child = self._start("ls-tree", "-r", "-l", "-z", "--full-tree", f"{rev}^{{tree}}")
        assert child.stdout is not None
        pending = b""
        while chunk := os.read(child.stdout.fileno(), _CHUNK):
            *records, pending = (pending + chunk).split(b"\0")
            if len(pending) > MAX_PATH_BYTES + 128:
                raise ExportError(f"{where} has a path longer than {MAX_PATH_BYTES} bytes; plan does not measure it")
            for record in records:
                meta, _, name = record.partition(b"\t")
                try:
                    mode, kind, oid, size = meta.decode("ascii").split()
                except ValueError:
                    raise ExportError(f"{where}: git listed a tree entry this export cannot read: {record[:200]!r}") from None
                yield _Entry(mode, kind, oid, int(size) if size.isdigit() else 0, os.fsdecode(name))
        if child.wait() != 0 or pending:
            raise self._failed(child, where)

    def _open(self, oid: str, where: str) -> tuple[subprocess.Popen[bytes], IO[bytes], str, int]:
        """Ask the one cat-file process for an object: (process, its output positioned at the content, type, size)."""
        if self._batch is None:
            self._batch = self._start("cat-file", "--batch", stdin=True)
        batch = self._batch
        assert batch.stdin is not None and batch.stdout is not None
        try:
            batch.stdin.write(oid.encode() + b"\n")
            batch.stdin.flush()
        except OSError:
            raise self._failed(batch, where) from None
        header = batch.stdout.readline().split()
        if len(header) == 2 and header[1] == b"missing":
            raise ExportError(f"{where} is missing object {oid}: the repository is incomplete or corrupt, and "
                              "plan measures nothing it cannot read")
        if len(header) != 3 or not header[2].isdigit():
            raise self._failed(batch, where)
        return batch, batch.stdout, header[1].decode(), int(header[2])

    def _copy(self, batch: subprocess.Popen[bytes], stream: IO[bytes], size: int, sink: Callable[[bytes], object],
              where: str) -> None:
        left = size
        while left:
            chunk = stream.read(min(left, _CHUNK))
            if not chunk:
                raise self._failed(batch, where)
            sink(chunk)
            left -= len(chunk)
        if stream.read(1) != b"\n":
            raise self._failed(batch, where)

    def read_blob(self, oid: str, limit: int, where: str) -> bytes:
        """A small blob's content; b"" for anything that is not a blob of at most limit bytes (read and dropped)."""
        batch, stream, kind, size = self._open(oid, where)
        parts: list[bytes] = []
        keep = kind == "blob" and size <= limit
        self._copy(batch, stream, size, parts.append if keep else (lambda _chunk: None), where)
        return b"".join(parts)

    def write_blob(self, oid: str, size: int, target: Path, *, executable: bool, where: str) -> int:
        batch, stream, kind, actual = self._open(oid, where)
        if kind != "blob" or actual != size:
            raise ExportError(f"{where}: object {oid} is a {kind} of {actual} bytes, not the blob of {size} bytes "
                              "its tree lists; the repository is corrupt")
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            self._copy(batch, stream, size, lambda chunk: _write_all(fd, chunk), where)
            os.fchmod(fd, 0o555 if executable else 0o444)
        finally:
            os.close(fd)
        return size


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def remove_tree(path: Path) -> None:
    """Remove a folder that may be read-only (an export) or hold folders a check made unreadable."""
    if path.is_symlink() or path.is_file():
        path.unlink()
        return
    if not path.exists():
        return

    def retry(function: object, failed: str, _exc: object) -> None:
        parent = os.path.dirname(failed)
        os.chmod(parent, stat.S_IRWXU)
        if os.path.isdir(failed) and not os.path.islink(failed):
            os.chmod(failed, stat.S_IRWXU)
            shutil.rmtree(failed, onerror=retry)
        else:
            os.unlink(failed)

    for folder, subfolders, _files in os.walk(path, onerror=lambda exc: None):
        os.chmod(folder, stat.S_IRWXU)
        for name in subfolders:
            child = os.path.join(folder, name)
            if not os.path.islink(child):
                os.chmod(child, stat.S_IRWXU)
    shutil.rmtree(path, onerror=retry)
