"""Where each store of a workspace lives. Every path is derived from the root and banach.toml,
so a workspace stays valid when moved or copied: nothing inside records an absolute path."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from shared.config import CONFIG_NAME, Config, load_config

if TYPE_CHECKING:
    from shared.git import GitRepo

Role = Literal["spec", "plan", "build", "monitor"]
ROLES: tuple[Role, ...] = ("spec", "plan", "build", "monitor")
LOOP_ROLES: tuple[Role, ...] = ("spec", "plan", "build")


@dataclass(frozen=True)
class Workspace:
    root: Path
    config: Config

    @classmethod
    def open(cls, root: Path | str) -> Workspace:
        resolved = Path(root).resolve()
        return cls(resolved, load_config(resolved))

    @property
    def config_file(self) -> Path:
        return self.root / CONFIG_NAME

    @property
    def canon(self) -> Path:
        return self.root / self.config.paths.canon

    @property
    def code(self) -> Path:
        return self.root / self.config.paths.code

    @property
    def code_git(self) -> Path:
        """The code repository's git directory: in build's state, out of the agent's reach (the agent writes
        the work tree, never the refs, index, hooks or config that judge it)."""
        return self.role_dir("build") / "code.git"

    def code_repo(self) -> GitRepo:
        """The code repository, for reading. A workspace made before the git directory moved to build's state
        is read where it is until build-loop moves it (build is the only role that writes there)."""
        from shared.git import GitRepo

        if not (self.code_git / "HEAD").exists() and (self.code / ".git" / "HEAD").exists():
            return GitRepo(self.code)
        return GitRepo(self.code, git_dir=self.code_git)

    @property
    def inbox(self) -> Path:
        return self.root / self.config.paths.inbox

    @property
    def plan_dir(self) -> Path:
        return self.root / self.config.paths.plan

    @property
    def fix_plan_json(self) -> Path:
        return self.plan_dir / "fix_plan.json"

    @property
    def fix_plan_md(self) -> Path:
        return self.plan_dir / "fix_plan.md"

    @property
    def state(self) -> Path:
        return self.root / self.config.paths.state

    def role_dir(self, role: Role) -> Path:
        """Each role's private state: its journal, locks and scratch space. Only that role writes here."""
        return self.state / role

    def journal_path(self, role: Role) -> Path:
        return self.role_dir(role) / "journal.db"

    @property
    def keys_dir(self) -> Path:
        """Per-role receipt keys. Never readable by an agent."""
        return self.state / "keys"

    @property
    def supervisor_dir(self) -> Path:
        return self.state / "supervisor"

    @property
    def supervisor_conf(self) -> Path:
        return self.supervisor_dir / "supervisord.conf"

    @property
    def supervisor_credentials(self) -> Path:
        """The supervisord socket's username and password (0600), unreadable inside every sandbox."""
        return self.supervisor_dir / "credentials"

    def log_path(self, role: Role) -> Path:
        return self.supervisor_dir / f"{role}.log"

    def relative(self, path: Path) -> str:
        """How a path is written into anything the workspace keeps."""
        try:
            return str(path.resolve().relative_to(self.root))
        except ValueError:
            return str(path)
