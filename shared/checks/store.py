"""Plan's own object store: state/plan/objects.git, a bare repository only plan writes.

Plan copies the objects of the one commit it measures out of build's repository into this store and
exports from here, so what it measures is what it holds: nothing another role (or an agent that reached
a repository) changes later can alter the copy. The copy is a local `git fetch` of exactly that commit
(depth 1) under the hardened configuration. The other side of a fetch is `git upload-pack`, which git
documents as safe to run in a repository one does not trust (no hooks, no configured commands).

Canon is exported from canon's own repository instead (see shared.checks.snapshot): spec is its only writer.
"""
from __future__ import annotations

from pathlib import Path

from shared.atomic import write_text
from shared.errors import ExportError, GitError
from shared.git import GitRepo, hardened_command


class PlanStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    def repo(self) -> GitRepo:
        if not (self.path / "HEAD").exists():
            return GitRepo.init(self.path, git_dir=self.path, bare=True)
        return GitRepo(self.path, git_dir=self.path)

    def _trusting(self, source: GitRepo) -> Path:
        """A global config of one line: the source is a safe.directory. Under the users backend build's account owns
        the code's repository, and git (upload-pack included) refuses a repository of another owner; git reads
        safe.directory only from global or system config. Upload-pack runs nothing of the repository's, which is
        why trusting it for a fetch is safe."""
        path = self.path.parent / f"{self.path.name}.fetch-config"
        write_text(path, f"[safe]\n\tdirectory = {source.git_dir.resolve()}\n")
        return path

    def fetch(self, source: GitRepo, commit: str) -> GitRepo:
        """The store, holding commit and every object of its tree. Raises ExportError when the source
        does not have them all (missing objects, a corrupt repository, a commit that is not there)."""
        try:
            repo = self.repo()
            # protocol v2 lets a fetch ask for a commit no ref points at; older git defaults to v0
            result = hardened_command(
                ["-c", "protocol.version=2", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                 "--no-recurse-submodules", "--no-auto-gc", "--depth=1", str(source.git_dir.resolve()),
                 f"+{commit}:refs/plan/measured"],
                git_dir=self.path, extra_env={"GIT_CONFIG_GLOBAL": str(self._trusting(source))})
        except GitError as exc:
            raise ExportError(f"cannot copy commit {commit[:12]} into plan's store {self.path}: {exc}") from None
        if result.returncode != 0:
            stderr = result.stderr.decode("utf-8", errors="replace").strip()
            raise ExportError(f"cannot copy commit {commit[:12]} from {source.git_dir} into plan's store {self.path}:\n"
                              f"{stderr}\nThe code repository may be missing objects or be corrupt; "
                              f"`git --git-dir={source.git_dir} fsck` says more.")
        return repo
