"""The one module that talks to git (through gitpython). Everything else passes our own values."""
from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from pathlib import Path

import git as gitpython

from shared.errors import GitError

IDENTITIES = {
    "spec": ("banach-spec", "spec@banach.invalid"),
    "build": ("banach-build", "build@banach.invalid"),
    "init": ("banach-init", "init@banach.invalid"),
}
# Repositories may be owned by another role's account (users backend); reading them is still our job.
_SAFE = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"}


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
    status: str  # git porcelain XY, "??" for untracked


class GitRepo:
    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._repo = gitpython.Repo(path)
        except (gitpython.InvalidGitRepositoryError, gitpython.NoSuchPathError):
            raise GitError(f"{path} is not a git repository") from None
        self._repo.git.update_environment(**_SAFE)

    @classmethod
    def init(cls, path: Path) -> GitRepo:
        path.mkdir(parents=True, exist_ok=True)
        gitpython.Repo.init(path, initial_branch="main")
        return cls(path)

    @classmethod
    def clone(cls, source: str, path: Path) -> GitRepo:
        """A full clone of a repository (a path or a URL, as git takes it) with its files checked out."""
        try:
            gitpython.Repo.clone_from(source, path)
        except gitpython.GitCommandError as exc:
            raise GitError(f"cannot clone {source}: {str(exc.stderr).strip()}") from None
        return cls(path)

    def _git(self, *args: str, role: str = "build", strip: bool = True) -> str:
        name, email = IDENTITIES.get(role, IDENTITIES["build"])
        env = {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
        }
        try:
            with self._repo.git.custom_environment(**env):
                out: str = self._repo.git.execute(["git", *args], strip_newline_in_stdout=strip)
                return out
        except gitpython.GitCommandError as exc:
            stderr = str(exc.stderr).strip()
            hint = ""
            if ".lock" in stderr and "exists" in stderr:
                hint = ("\nA git lock file was left behind (a git process died mid-write). If no git process is running "
                        "on this repository, remove the .lock file named above and run the command again.")
            raise GitError(f"git {args[0]} failed in {self.path}:\n{stderr}{hint}") from None

    # reading -----------------------------------------------------------------------------------
    def head(self) -> str | None:
        try:
            return self._git("rev-parse", "--verify", "-q", "HEAD")
        except GitError:
            return None

    def tree_id(self, rev: str, path: str = "") -> str:
        spec = f"{rev}:{path}" if path else f"{rev}^{{tree}}"
        try:
            return self._git("rev-parse", spec)
        except GitError:
            return ""

    def blob_ids(self, rev: str) -> dict[str, str]:
        out = self._git("ls-tree", "-r", "-z", rev, strip=False)
        result: dict[str, str] = {}
        for entry in out.split("\0"):
            if entry:
                meta, name = entry.split("\t", 1)
                result[name] = meta.split()[2]
        return result

    def files_at(self, rev: str) -> list[str]:
        return sorted(self.blob_ids(rev))

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
        except GitError:
            return 0

    def is_ancestor(self, older: str, newer: str) -> bool:
        try:
            self._git("merge-base", "--is-ancestor", older, newer)
            return True
        except GitError:
            return False

    def show(self, rev: str, path: str) -> str | None:
        try:
            return self._git("show", f"{rev}:{path}", strip=False)
        except GitError:
            return None

    def log(self, fmt: str, *args: str) -> str:
        return self._git("log", f"--format={fmt}", *args)

    def diff_names(self, older: str, newer: str) -> list[str]:
        return [p for p in self._git("diff", "--name-only", older, newer).splitlines() if p]

    def export(self, rev: str, destination: Path) -> None:
        """A clean checkout of rev into destination, reading only the object database."""
        data = self._repo.git.execute(["git", "archive", "--format=tar", rev], stdout_as_string=False)
        destination.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            archive.extractall(destination, filter="data")

    # the guards' view ----------------------------------------------------------------------------
    def ref_state(self) -> RefState:
        try:
            symbolic = self._git("symbolic-ref", "-q", "HEAD")
        except GitError:
            symbolic = ""
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
        stash = self.path / ".git" / "logs" / "refs" / "stash"
        if "refs/stash" not in wanted and stash.exists():
            stash.unlink()

    def changes(self) -> list[Change]:
        out = self._git("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", strip=False)
        return [Change(entry[3:], entry[:2]) for entry in out.split("\0") if len(entry) > 3]

    def revert_path(self, rev: str, path: str) -> None:
        if self.show(rev, path) is not None:
            self._git("checkout", rev, "--", path)
        else:
            target = self.path / path
            if target.is_symlink() or target.is_file():
                target.unlink()
            self._git("rm", "-q", "--cached", "--ignore-unmatch", "--", path)

    def rollback(self, rev: str) -> None:
        self._git("reset", "-q", "--hard", rev)
        self._git("clean", "-q", "-fd")

    # writing -----------------------------------------------------------------------------------
    def commit_all(self, message: str, trailers: dict[str, str], *, role: str, allow_empty: bool = False) -> str:
        self._git("add", "-A")
        body = message.rstrip() + "\n"
        if trailers:
            body += "\n" + "".join(f"{key}: {value}\n" for key, value in trailers.items())
        args = ["commit", "-q", "--no-verify", "-m", body]
        if allow_empty:
            args.append("--allow-empty")
        self._git(*args, role=role)
        head = self.head()
        assert head is not None
        return head


def is_repo(path: Path) -> bool:
    return (path / ".git").exists()
