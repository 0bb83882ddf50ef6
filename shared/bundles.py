"""Git bundles: the code at a commit, or a candidate's new commits, as one content-addressed file.

The head sends a worker the code at the base commit as a full bundle named by the commit id
(`bundle_commit`, made once per base and reused); the worker opens it (`open_bundle`) and sends back a
candidate as a thin bundle of base..tip (`bundle_range`); the head brings the candidate's objects in
(`fetch_bundle`), refusing a tip that does not descend from the base it handed out.

A bundle from a worker is data written by a hostile agent. Reading one: its size is bounded before git
opens it; its header is parsed here (one head, no partial-clone filter, a known hash); `git bundle verify`
checks it against the repository; and its pack goes through `git index-pack --strict` (every object
fsck-checked: no `.git` or `..` entries in trees, no malformed commits, all links present) into a
quarantine object directory, so a bundle that is refused leaves no objects and no refs behind. Nothing is
checked out: callers materialise a tree with shared.export or the hardened `GitRepo.rollback`. Every git
child runs under the hardened configuration of shared.git (no hooks, no attributes from the tree, no
system or global config). git 2.39's `git fetch` from a bundle does not fsck what it receives, so this
module indexes the pack itself.

Making one: `git bundle create` names refs, never bare commits, so bundles are made in a throwaway bare
repository that borrows the objects of the real one (objects/info/alternates) and holds the one ref; the
real repository's refs are never touched (the guards compare them).
"""
from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from shared.errors import GitError
from shared.git import GIT_TIMEOUT, GitRepo, hardened_command, hardened_env, protect_git_dir

if TYPE_CHECKING:
    from shared.workspace import Workspace

DEFAULT_MAX_BYTES = 2 * 1024**3  # a bundle larger than this is refused (reading) or not written (making)
MAX_HEADER_BYTES = 1 << 20
BUNDLE_REF = "refs/banach/bundle"  # the one ref inside every bundle this module makes
SIGNATURES = (b"# v2 git bundle\n", b"# v3 git bundle\n")
HASH_LENGTHS = {"sha1": 40, "sha256": 64}


class BundleError(GitError):
    """A bundle could not be made, or one that was received is malformed, too large, or not what was expected."""


@dataclass(frozen=True)
class BundleHeader:
    """What a bundle says about itself, before its pack is read."""

    tip: str  # the commit its one ref points at
    ref: str
    prerequisites: tuple[str, ...]  # commits the reader must already have (empty for a full bundle)
    pack_offset: int  # where the pack starts in the file
    object_format: str = "sha1"


def read_header(bundle: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> BundleHeader:
    """Parse and check a bundle's header: size within max_bytes, v2 or v3, exactly one head, no filter."""
    try:
        size = bundle.stat().st_size
        with bundle.open("rb") as handle:
            head = handle.read(MAX_HEADER_BYTES)
    except OSError as exc:
        raise BundleError(f"cannot read the bundle {bundle}: {exc}") from None
    if size > max_bytes:
        raise BundleError(f"the bundle {bundle} has {size} bytes, more than the {max_bytes} allowed; refused unread")
    signature = next((s for s in SIGNATURES if head.startswith(s)), None)
    end = head.find(b"\n\n")
    if signature is None or end < 0:
        raise BundleError(f"{bundle} is not a git bundle (no v2/v3 signature, or no end of header in its first "
                          f"{MAX_HEADER_BYTES} bytes)")
    object_format, prerequisites, heads = "sha1", [], []
    for raw in head[len(signature):end].split(b"\n"):
        line = raw.decode("utf-8", errors="replace")
        if line.startswith("@"):
            key, _, value = line[1:].partition("=")
            if key != "object-format" or value not in HASH_LENGTHS:
                raise BundleError(f"the bundle {bundle} has the capability {line!r}; only @object-format=sha1|sha256 "
                                  "is accepted (a filtered bundle lacks objects)")
            object_format = value
        elif line.startswith("-"):
            prerequisites.append(_object_id(line[1:].split(" ", 1)[0], object_format, bundle))
        else:
            oid, _, ref = line.partition(" ")
            heads.append((_object_id(oid, object_format, bundle), ref))
    if len(heads) != 1 or not heads[0][1].startswith("refs/"):
        raise BundleError(f"the bundle {bundle} names {len(heads)} refs ({', '.join(r for _, r in heads)[:200]}); "
                          "exactly one ref under refs/ is expected")
    return BundleHeader(heads[0][0], heads[0][1], tuple(prerequisites), end + 2, object_format)


def _object_id(text: str, object_format: str, bundle: Path) -> str:
    if len(text) != HASH_LENGTHS[object_format] or any(c not in "0123456789abcdef" for c in text):
        raise BundleError(f"the bundle {bundle} has a malformed object id in its header: {text[:80]!r}")
    return text


# making -------------------------------------------------------------------------------------------------

def bundle_commit(repo: GitRepo, rev: str, dest_dir: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Path:
    """The full history of rev as dest_dir/<commit>.bundle, written atomically; an existing one is reused."""
    commit = _commit_id(repo, rev)
    target = dest_dir / f"{commit}.bundle"
    with contextlib.suppress(BundleError):
        header = read_header(target, max_bytes=max_bytes)
        if header.tip == commit and not header.prerequisites:
            return target
    return _create(repo, commit, None, target, max_bytes)


def bundle_range(repo: GitRepo, base: str, tip: str, dest_dir: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Path:
    """The commits of base..tip as a thin bundle dest_dir/<tip>-on-<base>.bundle (the reader must have base)."""
    base_id, tip_id = _commit_id(repo, base), _commit_id(repo, tip)
    if base_id == tip_id:
        raise BundleError(f"nothing to bundle: the tip {tip_id[:12]} is the base itself")
    if not repo.is_ancestor(base_id, tip_id):
        raise BundleError(f"cannot bundle {base_id[:12]}..{tip_id[:12]} in {repo.path}: the tip does not descend from the base")
    target = dest_dir / f"{tip_id}-on-{base_id}.bundle"
    with contextlib.suppress(BundleError):
        header = read_header(target, max_bytes=max_bytes)
        if header.tip == tip_id and base_id in header.prerequisites:
            return target
    return _create(repo, tip_id, base_id, target, max_bytes)


def _commit_id(repo: GitRepo, rev: str) -> str:
    commit = repo.resolve(f"{rev}^{{commit}}")
    if not commit:
        raise BundleError(f"{rev!r} is not a commit of {repo.path}")
    return commit


def _create(repo: GitRepo, tip: str, base: str | None, target: Path, max_bytes: int) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="banach-bundle-") as scratch:
        view = Path(scratch) / "view.git"
        GitRepo.init(view, git_dir=view, bare=True)
        (view / "objects" / "info").mkdir(parents=True, exist_ok=True)
        (view / "objects" / "info" / "alternates").write_text(f"{(repo.git_dir / 'objects').resolve()}\n")
        _git(["update-ref", BUNDLE_REF, tip], git_dir=view, what=f"point a scratch ref at {tip[:12]}")
        partial = target.parent / f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
        try:
            span = f"{base}..{BUNDLE_REF}" if base else BUNDLE_REF
            _git(["bundle", "create", "-q", str(partial), span], git_dir=view, what=f"bundle {span} of {repo.path}")
            size = partial.stat().st_size
            if size > max_bytes:
                raise BundleError(f"the bundle of {tip[:12]} from {repo.path} would have {size} bytes, more than the "
                                  f"{max_bytes} allowed")
            with partial.open("rb") as handle:
                os.fsync(handle.fileno())
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
    return target


# reading ------------------------------------------------------------------------------------------------

def open_bundle(bundle: Path, into: Path, *, git_dir: Path, prerequisites_from: GitRepo | None = None,
                ref: str = "refs/heads/main", max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[GitRepo, str]:
    """Make (or update) the repository at git_dir with work tree `into`, bring the bundle's objects in and
    point `ref` at its tip; returns the repository and the tip. The work tree is not written.

    A thin bundle needs its prerequisites: with prerequisites_from, the repository borrows that repository's
    objects (objects/info/alternates) and must not outlive it."""
    header = read_header(bundle, max_bytes=max_bytes)
    if (git_dir / "HEAD").exists():
        protect_git_dir(git_dir)
        repo = GitRepo(into, git_dir=git_dir)
    else:
        repo = GitRepo.init(into, git_dir=git_dir)
    if prerequisites_from is not None:
        _borrow_objects(repo, prerequisites_from)
    _import(repo, bundle, header, base=None)
    _git(["update-ref", ref, header.tip], git_dir=repo.git_dir, what=f"point {ref} at {header.tip[:12]}")
    return repo, header.tip


def fetch_bundle(repo: GitRepo, bundle: Path, ref: str, *, base: str, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Bring a candidate's objects into repo and point `ref` at its tip, which must be a commit descending
    from `base` (the commit the worker was given). Returns the tip. A refused bundle changes nothing."""
    header = read_header(bundle, max_bytes=max_bytes)
    base_id = _commit_id(repo, base)
    _import(repo, bundle, header, base=base_id)
    _git(["update-ref", ref, header.tip], git_dir=repo.git_dir, what=f"point {ref} at {header.tip[:12]}")
    return header.tip


def _borrow_objects(repo: GitRepo, lender: GitRepo) -> None:
    alternates = repo.git_dir / "objects" / "info" / "alternates"
    line = str((lender.git_dir / "objects").resolve())
    present = alternates.read_text().splitlines() if alternates.exists() else []
    if line not in present:
        alternates.parent.mkdir(parents=True, exist_ok=True)
        alternates.write_text("".join(f"{entry}\n" for entry in [*present, line]))


def _import(repo: GitRepo, bundle: Path, header: BundleHeader, *, base: str | None) -> None:
    """Verify the bundle against repo, index its pack strictly into a quarantine, check what it holds, and only
    then move the pack into repo's objects."""
    repo_format = _git(["rev-parse", "--show-object-format"], git_dir=repo.git_dir, what="read the repository's hash")
    if header.object_format != repo_format:
        raise BundleError(f"the bundle {bundle} uses {header.object_format} object ids and {repo.git_dir} uses {repo_format}")
    _git(["bundle", "verify", str(bundle.resolve())], git_dir=repo.git_dir,
         what=f"verify the bundle {bundle} (a missing prerequisite means the reader lacks the base)")
    with _quarantine(repo) as env:
        _index_pack(repo, bundle, header, env)
        kind = _git(["cat-file", "-t", header.tip], git_dir=repo.git_dir, env=env, what="read the bundle's tip")
        if kind != "commit":
            raise BundleError(f"the tip {header.tip[:12]} of the bundle {bundle} is a {kind}, not a commit")
        if base is not None:
            descends = hardened_command(["merge-base", "--is-ancestor", base, header.tip], git_dir=repo.git_dir,
                                        extra_env=env)
            if descends.returncode != 0:
                raise BundleError(f"the bundle {bundle} was refused: its tip {header.tip[:12]} does not descend from the "
                                  f"base {base[:12]} the worker was given")
        _migrate(Path(env["GIT_OBJECT_DIRECTORY"]), repo.git_dir / "objects")


@contextlib.contextmanager
def _quarantine(repo: GitRepo) -> Iterator[dict[str, str]]:
    """A fresh object directory inside repo's, which reads through to repo's objects; removed on exit."""
    objects = repo.git_dir / "objects"
    incoming = Path(tempfile.mkdtemp(prefix="incoming-", dir=objects))
    (incoming / "pack").mkdir()
    try:
        yield {"GIT_OBJECT_DIRECTORY": str(incoming), "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects.resolve())}
    finally:
        shutil.rmtree(incoming, ignore_errors=True)


def _index_pack(repo: GitRepo, bundle: Path, header: BundleHeader, env: Mapping[str, str]) -> None:
    """git index-pack --strict on the bundle's pack, streamed from the file rather than read into memory, so it
    runs here with hardened_env (hardened_command takes its input as bytes)."""
    argv = ["git", "--no-pager", "--no-replace-objects", "index-pack", "--stdin", "--fix-thin", "--strict"]
    git_dir = repo.git_dir.resolve()
    try:
        with bundle.open("rb") as pack:
            pack.seek(header.pack_offset)
            result = subprocess.run(argv, stdin=pack, capture_output=True, timeout=GIT_TIMEOUT, check=False,
                                    cwd=git_dir, env=hardened_env(git_dir=git_dir, extra=env))
    except subprocess.TimeoutExpired:
        raise BundleError(f"git index-pack took longer than {GIT_TIMEOUT:g}s on the bundle {bundle}; stopped it") from None
    except OSError as exc:
        raise BundleError(f"cannot index the pack of the bundle {bundle}: {exc}") from None
    if result.returncode != 0:
        raise BundleError(f"the bundle {bundle} was refused: its pack is corrupt or holds objects that fail git's checks:\n"
                          + result.stderr.decode("utf-8", errors="replace").strip()[-2000:])


def _migrate(incoming: Path, objects: Path) -> None:
    """Move the quarantined pack into the repository: data files first, the .idx (which makes a pack visible) last."""
    files = sorted((incoming / "pack").iterdir(), key=lambda path: path.suffix == ".idx")
    for path in files:
        destination = objects / "pack" / path.name
        if destination.exists():  # the same pack is already there (packs are named by their content)
            continue
        os.chmod(path, 0o444)
        os.replace(path, destination)


def _git(args: list[str], *, git_dir: Path, what: str, env: Mapping[str, str] | None = None) -> str:
    result = hardened_command(args, git_dir=git_dir, extra_env=env)
    if result.returncode != 0:
        stderr = result.stderr.decode("utf-8", errors="replace").strip()
        raise BundleError(f"cannot {what}: git {args[0]} failed in {git_dir}:\n{stderr[-2000:]}")
    return result.stdout.decode("utf-8", errors="replace").strip()


def node_workspace(scratch: Path, config_text: str, *, code_bundle: bytes, canon_bundle: bytes) -> Workspace:
    """On a cluster node: a workspace of its own under scratch, with the head's banach.toml, canon's repository and
    the code's git directory (where build keeps it) made from the head's bundles. No work tree is written."""
    from shared.workspace import Workspace

    root = scratch / "ws"
    root.mkdir()
    (root / "banach.toml").write_text(config_text)
    ws = Workspace.open(root)
    bundles = scratch / "bundles"
    bundles.mkdir()
    (bundles / "canon.bundle").write_bytes(canon_bundle)
    (bundles / "code.bundle").write_bytes(code_bundle)
    open_bundle(bundles / "canon.bundle", ws.canon, git_dir=ws.canon / ".git")
    open_bundle(bundles / "code.bundle", ws.code, git_dir=ws.code_git)
    return ws
