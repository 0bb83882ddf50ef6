"""The one module that talks to git. Everything else passes our own values.

Every git command Banach runs goes through `hardened_command` (shared/hardened_git.py): a fixed
configuration in which nothing the repository or the work tree says is executed or honoured as
settings. The code repository's git directory lives in build's state, outside
the work tree the agent writes; a `.git` the agent makes in the work tree is just an out-of-scope path.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import git as gitpython

from shared.errors import GitError
from shared.hardened_git import (  # noqa: F401 - re-exported: callers import them from here
    GIT_TIMEOUT,
    HARDENED_CONFIG,
    NEUTRAL_ATTRIBUTES,
    control_files,
    hardened_command,
    hardened_env,
    protect_git_dir,
    restore_control_files,
)

IDENTITIES = {
    "spec": ("banach-spec", "spec@banach.invalid"),
    "build": ("banach-build", "build@banach.invalid"),
    "init": ("banach-init", "init@banach.invalid"),
}


@dataclass(frozen=True)
class RefState:
    """What the guards restore: HEAD, every ref, and the index flags that hide files."""

    head_symbolic: str  # "refs/heads/main", or "" when detached
    head: str
    refs: tuple[tuple[str, str], ...]
    hidden: tuple[str, ...]  # paths with skip-worktree or assume-unchanged set


@dataclass(frozen=True)
class Change:
    path: str
    status: str  # git porcelain XY: "??" untracked, "!!" ignored


@dataclass(frozen=True)
class Entry:
    """One file of a snapshot to commit: git mode ("100644", "100755", "120000") and blob id."""

    mode: str
    blob: str


class GitRepo:
    """A repository: its git directory, and the work tree it checks out (None for a bare store)."""

    def __init__(self, path: Path, *, git_dir: Path | None = None) -> None:
        self.path = path
        self.git_dir = git_dir if git_dir is not None else path / ".git"
        if not (self.git_dir / "HEAD").exists():
            raise GitError(f"{path} is not a git repository (no git directory at {self.git_dir})")

    @classmethod
    def init(cls, path: Path, *, git_dir: Path | None = None, bare: bool = False) -> GitRepo:
        git_dir = git_dir if git_dir is not None else path / ".git"
        path.mkdir(parents=True, exist_ok=True)
        git_dir.mkdir(parents=True, exist_ok=True)
        args = ["init", "-q", "--initial-branch=main"] + (["--bare"] if bare else [])
        result = hardened_command(args, git_dir=git_dir, work_tree=None if bare else path, cwd=path)
        if result.returncode != 0:
            raise GitError(f"cannot create a git repository at {git_dir}: {result.stderr.decode(errors='replace').strip()}")
        if not bare:
            hardened_command(["config", "core.bare", "false"], git_dir=git_dir)
        protect_git_dir(git_dir)
        return cls(path, git_dir=git_dir)

    @classmethod
    def clone(cls, source: str, path: Path, *, git_dir: Path | None = None) -> GitRepo:
        """A full clone of a repository (a path or a URL, as git takes it) with its files checked out.
        With git_dir, the git directory is kept there and the work tree gets no .git of its own."""
        git_dir = git_dir if git_dir is not None else path / ".git"
        env = hardened_env(git_dir=git_dir)
        del env["GIT_DIR"]
        options = ["--no-checkout", "--no-hardlinks"] + ([f"--separate-git-dir={git_dir}"] if git_dir != path / ".git" else [])
        try:
            gitpython.Repo.clone_from(source, path, multi_options=options, env=env)
        except gitpython.GitCommandError as exc:
            raise GitError(f"cannot clone {source}: {str(exc.stderr).strip()}") from None
        gitfile = path / ".git"
        if git_dir != gitfile and gitfile.is_file():
            gitfile.unlink()
        repo = cls(path, git_dir=git_dir)
        protect_git_dir(git_dir)
        repo._git("config", "--unset-all", "core.worktree", check=False)
        repo._git("reset", "-q", "--hard", "HEAD", check=False)
        return repo

    @classmethod
    def adopt(cls, path: Path, git_dir: Path) -> GitRepo:
        """Open the repository whose git directory belongs at git_dir, moving a .git out of the work tree
        first (a workspace made before the git directory moved out of the agent's reach)."""
        inside = path / ".git"
        if not (git_dir / "HEAD").exists() and inside.is_dir() and (inside / "HEAD").exists():
            git_dir.parent.mkdir(parents=True, exist_ok=True)
            os.replace(inside, git_dir)
            hardened_command(["config", "--unset-all", "core.worktree"], git_dir=git_dir)
        protect_git_dir(git_dir)
        return cls(path, git_dir=git_dir)

    def command(self, *args: str, input: bytes | None = None, index_file: Path | None = None,
                role: str = "build") -> subprocess.CompletedProcess[bytes]:
        name, email = IDENTITIES.get(role, IDENTITIES["build"])
        identity = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name,
                    "GIT_COMMITTER_EMAIL": email}
        work_tree = None if self.path == self.git_dir else self.path
        return hardened_command(list(args), git_dir=self.git_dir, work_tree=work_tree, input=input,
                                index_file=index_file, extra_env=identity)

    def _git(self, *args: str, role: str = "build", strip: bool = True, check: bool = True,
             input: bytes | None = None, index_file: Path | None = None) -> str:
        result = self.command(*args, input=input, index_file=index_file, role=role)
        if result.returncode != 0 and check:
            stderr = result.stderr.decode("utf-8", errors="replace").strip()
            hint = ""
            if ".lock" in stderr and "exists" in stderr:
                hint = ("\nA git lock file was left behind (a git process died mid-write). If no git process is running "
                        "on this repository, remove the .lock file named above and run the command again.")
            raise GitError(f"git {args[0]} failed in {self.path}:\n{stderr}{hint}")
        out = result.stdout.decode("utf-8", errors="surrogateescape")
        return out.rstrip("\n") if strip else out

    # reading -----------------------------------------------------------------------------------
    def head(self) -> str | None:
        out = self._git("rev-parse", "--verify", "-q", "HEAD", check=False)
        return out or None

    def resolve(self, rev: str) -> str:
        return self._git("rev-parse", "--verify", "-q", rev, check=False)

    def tree_id(self, rev: str, path: str = "") -> str:
        spec = f"{rev}:{path}" if path else f"{rev}^{{tree}}"
        return self._git("rev-parse", "--verify", "-q", spec, check=False)

    def tree_entries(self, rev: str) -> dict[str, Entry]:
        """Every file of a commit: path -> (mode, blob). Gitlinks (submodules) have mode 160000."""
        out = self._git("ls-tree", "-r", "-z", "--full-tree", rev, strip=False)
        result: dict[str, Entry] = {}
        for record in out.split("\0"):
            if record:
                meta, name = record.split("\t", 1)
                mode, _kind, blob = meta.split()
                result[name] = Entry(mode, blob)
        return result

    def blob_ids(self, rev: str) -> dict[str, str]:
        return {path: entry.blob for path, entry in self.tree_entries(rev).items()}

    def blobs(self, ids: list[str]) -> dict[str, bytes]:
        """The contents of these blobs, read in one `cat-file --batch` (ids that are not blobs are left out)."""
        if not ids:
            return {}
        out = self.command("cat-file", "--batch", input="".join(f"{blob}\n" for blob in ids).encode()).stdout
        found: dict[str, bytes] = {}
        at = 0
        while at < len(out):
            end = out.index(b"\n", at)
            header = out[at:end].split()
            at = end + 1
            if len(header) == 3 and header[1] == b"blob":
                size = int(header[2])
                found[header[0].decode()] = out[at:at + size]
                at += size + 1
            elif len(header) == 3:
                at += int(header[2]) + 1
        return found

    def files_at(self, rev: str) -> list[str]:
        return sorted(self.tree_entries(rev))

    def trailer(self, rev: str, key: str) -> str:
        return self._git("log", "-1", f"--format=%(trailers:key={key},valueonly)", rev).strip()

    def commits_with_trailer(self, since: str | None, until: str, key: str) -> list[tuple[str, str]]:
        """(commit, trailer value) for commits in since..until carrying the trailer, oldest first."""
        span = f"{since}..{until}" if since else until
        out = self._git("log", "--reverse", f"--format=%H%x00%(trailers:key={key},valueonly,separator=%x2C)", span)
        rows = []
        for line in out.splitlines():
            commit, _, value = line.partition("\0")
            if value.strip():
                rows.append((commit, value.strip()))
        return rows

    def count_commits(self, since: str | None, until: str) -> int:
        span = f"{since}..{until}" if since else until
        try:
            return int(self._git("rev-list", "--count", span))
        except (GitError, ValueError):
            return 0

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.command("merge-base", "--is-ancestor", older, newer).returncode == 0

    def commit_parts(self, rev: str) -> tuple[str, tuple[str, ...]]:
        """(tree, parents) of a commit, or ("", ()) when there is none."""
        out = self._git("log", "-1", "--format=%T %P", rev, check=False).split()
        return (out[0], tuple(out[1:])) if out else ("", ())

    def show(self, rev: str, path: str) -> str | None:
        result = self.command("show", f"{rev}:{path}")
        return result.stdout.decode("utf-8", errors="replace") if result.returncode == 0 else None

    def log(self, fmt: str, *args: str) -> str:
        return self._git("log", f"--format={fmt}", *args)

    def origin_base(self, head: str) -> str:
        """The source's commit build started from: where the clone's origin branch meets head ("" if unknown)."""
        origin = self.resolve("refs/remotes/origin/HEAD")
        if not origin:
            return ""
        result = self.command("merge-base", origin, head)
        return result.stdout.decode().strip() if result.returncode == 0 else ""

    def diff_names(self, older: str, newer: str) -> list[str]:
        # --no-renames: a rename is its two paths (git diff pairs them by default and names only the new one)
        return [p for p in self._git("diff", "--no-ext-diff", "--no-textconv", "--no-renames", "--name-only", "-z",
                                     older, newer, strip=False).split("\0") if p]

    def export(self, rev: str, destination: Path, *, leave_out: tuple[str, ...] = ()) -> None:
        """A clean copy of rev into destination, from the object database alone (see shared.export)."""
        from shared.export import export_commit

        export_commit(self, rev, destination, leave_out=leave_out)

    # the guards' view ----------------------------------------------------------------------------
    def ref_state(self) -> RefState:
        symbolic = self._git("symbolic-ref", "-q", "HEAD", check=False)
        refs = self._git("for-each-ref", "--format=%(refname) %(objectname)")
        pairs = tuple(sorted((name, sha) for name, _, sha in (line.partition(" ") for line in refs.splitlines() if line)))
        return RefState(symbolic, self.head() or "", pairs, self.hidden_paths())

    def hidden_paths(self) -> tuple[str, ...]:
        out = self._git("ls-files", "-v", "-z", strip=False)
        hidden = []
        for entry in out.split("\0"):
            if len(entry) > 2 and (entry[0] == "S" or entry[0].islower()):
                hidden.append(entry[2:])
        return tuple(sorted(hidden))

    def restore_refs(self, state: RefState) -> None:
        """Put HEAD, refs and index flags back as they were; the work tree is left alone to be judged."""
        current = dict(self.ref_state().refs)
        wanted = dict(state.refs)
        for ref in current.keys() - wanted.keys():
            self._git("update-ref", "-d", ref)
        for ref, sha in wanted.items():
            if current.get(ref) != sha:
                self._git("update-ref", ref, sha)
        if state.head_symbolic:
            self._git("symbolic-ref", "HEAD", state.head_symbolic)
        self._git("reset", "-q", "--mixed", state.head)
        hidden = self.hidden_paths()
        if hidden:  # one flag per call: given both, git applies only the last
            self._git("update-index", "--no-skip-worktree", "--", *hidden)
            self._git("update-index", "--no-assume-unchanged", "--", *hidden)
        stash = self.git_dir / "logs" / "refs" / "stash"
        if "refs/stash" not in wanted and stash.exists():
            stash.unlink()

    def changes(self) -> list[Change]:
        """Every path that differs from HEAD, untracked and ignored ones included."""
        out = self._git("status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=traditional",
                        "--no-renames", "--ignore-submodules=none", strip=False)
        return [Change(entry[3:], entry[:2]) for entry in out.split("\0") if len(entry) > 3]

    def revert_path(self, rev: str, path: str) -> None:
        """Put one path back as it is in rev (or remove it), whatever it is now: file, link or folder."""
        target = self.path / path
        if target.is_symlink() or target.exists() and not target.is_dir():
            target.unlink()
        elif target.is_dir():
            import shutil

            shutil.rmtree(target)
        self._git("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", path)
        if path in self.tree_entries_of(rev, path):
            self._git("checkout", rev, "--", path)

    def tree_entries_of(self, rev: str, path: str) -> set[str]:
        out = self._git("ls-tree", "-z", "--name-only", rev, "--", path, strip=False)
        return {p for p in out.split("\0") if p}

    def rollback(self, rev: str) -> None:
        """The work tree becomes exactly rev: tracked files reset, everything else (ignored too) removed."""
        self._git("reset", "-q", "--hard", rev)
        self._git("clean", "-q", "-ffdx")

    def reset_branch(self, branch: str, rev: str) -> None:
        """HEAD on branch, the branch at rev, the work tree and index exactly rev (a lane before its turn)."""
        self._git("update-ref", branch, rev)
        self._git("symbolic-ref", "HEAD", branch)
        self.rollback(rev)

    def check_out(self, rev: str) -> None:
        """The work tree and index become exactly rev, and the branch does not move: what the integrator measures
        before it publishes (a crash here is undone by rollback to HEAD)."""
        self._git("read-tree", "-u", "--reset", rev)
        self._git("clean", "-q", "-ffdx")

    def control_files(self) -> dict[str, bytes | None]:
        """The git directory's files that steer git: what the guards restore if anything but build changed them."""
        return control_files(self.git_dir)

    def restore_control_files(self, saved: dict[str, bytes | None]) -> list[str]:
        """Put the control files back as saved; returns the ones that had changed."""
        return restore_control_files(self.git_dir, saved)

    # writing -----------------------------------------------------------------------------------
    def hash_files(self, paths: list[str]) -> dict[str, Entry]:
        """Store the current content of work-tree paths as blobs: path -> (mode, blob). Links are stored as
        links; the caller has made sure each path is a regular file or a link."""
        result: dict[str, Entry] = {}
        regular = []
        for path in paths:
            full = self.path / path
            if full.is_symlink():
                blob = self._git("hash-object", "-w", "--stdin", input=os.fsencode(os.readlink(full)))
                result[path] = Entry("120000", blob)
            else:
                regular.append(path)
        if regular:
            listing = "".join(str(self.path / p) + "\n" for p in regular).encode("utf-8", errors="surrogateescape")
            blobs = self._git("hash-object", "-w", "--no-filters", "--stdin-paths", input=listing).splitlines()
            for path, blob in zip(regular, blobs, strict=True):
                executable = os.stat(self.path / path).st_mode & 0o111
                result[path] = Entry("100755" if executable else "100644", blob)
        return result

    def commit_entries(self, parent: str, entries: dict[str, Entry | None], message: str, trailers: dict[str, str],
                       *, role: str) -> tuple[str, str]:
        """Make (but do not yet publish) a commit: parent's tree with `entries` applied (None removes a path).
        Returns (commit, tree). The work tree and the index are not read."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="banach-index-") as scratch:
            index = Path(scratch) / "index"
            self._git("read-tree", parent, index_file=index)
            info = "".join(f"{e.mode} {e.blob}\t{p}\0" if e else f"0 {'0' * 40}\t{p}\0" for p, e in sorted(entries.items()))
            if info:
                self._git("update-index", "-z", "--index-info", input=info.encode("utf-8", errors="surrogateescape"),
                          index_file=index)
            tree = self._git("write-tree", index_file=index)
        body = message.rstrip() + "\n"
        if trailers:
            body += "\n" + "".join(f"{key}: {value}\n" for key, value in trailers.items())
        commit = self._git("commit-tree", tree, "-p", parent, "-F", "-", input=body.encode(), role=role)
        return commit, tree

    def publish(self, commit: str, expected: str) -> None:
        """Move the current branch to commit, only if it still points at expected; then make the work tree
        and index exactly that commit."""
        self._git("update-ref", "-m", "banach: kept", "HEAD", commit, expected)
        self.rollback(commit)

    def commit_all(self, message: str, trailers: dict[str, str], *, role: str, allow_empty: bool = False) -> str:
        self._git("add", "-A")
        body = message.rstrip() + "\n"
        if trailers:
            body += "\n" + "".join(f"{key}: {value}\n" for key, value in trailers.items())
        args = ["commit", "-q", "--no-verify", "-F", "-"]
        if allow_empty:
            args.append("--allow-empty")
        self._git(*args, role=role, input=body.encode())
        head = self.head()
        assert head is not None
        return head


def is_repo(path: Path, git_dir: Path | None = None) -> bool:
    return ((git_dir if git_dir is not None else path / ".git") / "HEAD").exists()
