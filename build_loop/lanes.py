"""Lanes: the work trees of parallel workers (build.workers > 1).

Lane K lives in state/build/lanes/K: `tree/` is the work tree its agent writes, `code.git/` its own git directory.
Each lane has refs, HEAD and an index of its own, so the guards judge one turn's refs without seeing another lane or
the integrator move main; its `objects` is the code repository's object store (a link), so the blobs a lane's fence
stores and the candidate commit it makes are already where the integrator reads them. Like the code's git directory,
a lane's is in build's state, out of every agent's reach.

A lane is reset to the turn's base commit before every turn: whatever the last turn left is gone.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from shared.git import GitRepo
from shared.workspace import Workspace

BRANCH = "refs/heads/main"


@dataclass(frozen=True)
class Lane:
    number: int
    root: Path  # state/build/lanes/K

    @classmethod
    def of(cls, ws: Workspace, number: int) -> Lane:
        return cls(number, ws.role_dir("build") / "lanes" / str(number))

    @property
    def name(self) -> str:
        return f"lane {self.number}"

    @property
    def tree(self) -> Path:
        return self.root / "tree"

    @property
    def git_dir(self) -> Path:
        return self.root / "code.git"

    def repo(self, code: GitRepo, base: str) -> GitRepo:
        """The lane's repository, its branch and work tree exactly `base` (made on first use)."""
        objects = self.git_dir / "objects"
        if not (self.git_dir / "HEAD").exists() or not objects.is_symlink():
            shutil.rmtree(self.root, ignore_errors=True)
            repo = GitRepo.init(self.tree, git_dir=self.git_dir)
            shutil.rmtree(objects)
            os.symlink(code.git_dir.resolve() / "objects", objects)
        else:
            repo = GitRepo(self.tree, git_dir=self.git_dir)
        repo.reset_branch(BRANCH, base)
        return repo
