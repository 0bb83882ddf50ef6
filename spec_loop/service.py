"""The spec role's state: its journal, its lock, and the one path by which a reviewed draft becomes a version."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from canon.model import Document
from canon.store import CanonStore
from shared.atomic import file_lock
from shared.git import GitRepo, is_repo
from shared.journal import Journal
from shared.workspace import Workspace
from spec_loop.draft import Draft, Review, review


@dataclass(frozen=True)
class Decision:
    draft: str
    accepted: bool
    version: int
    problems: tuple[str, ...] = ()
    changes: dict[str, list[str]] | None = None

    def describe(self) -> str:
        if not self.accepted:
            return f"refused {self.draft}:\n" + "\n".join(f"  {p}" for p in self.problems)
        if not self.changes or not any(self.changes.values()):
            return f"accepted {self.draft}: canon is already v{self.version}, nothing changed"
        names = {"tests": "conformance tests"}
        parts = [f"{names.get(label, label)} {', '.join(ids)}" for label, ids in self.changes.items() if ids]
        return f"accepted {self.draft} as canon v{self.version} ({'; '.join(parts)})"


class SpecService:
    def __init__(self, ws: Workspace, *, reconcile_agent: str = "") -> None:
        self.ws = ws
        from spec_loop.reconcile_agent import command_for

        self.reconcile_command = command_for(ws, reconcile_agent)
        self.store = CanonStore(ws.canon)
        self.journal = Journal.for_role(ws, "spec")
        self.notices: list[str] = []  # things a person should hear about the last decision

    def close(self) -> None:
        self.journal.close()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Serializes intake and edit sessions: one change to canon at a time."""
        with file_lock(self.ws.role_dir("spec") / "canon.lock", what="a canon change"):
            self.recover()
            yield

    def recover(self) -> None:
        """A crash between writing canon's files and committing leaves the work tree dirty: put it back."""
        dirty = self.store.dirty()
        if dirty:
            self.store.git.rollback("HEAD")
            self.journal.append("recovered", {"reason": "canon work tree differed from its last version",
                                              "files": dirty, "version": self.store.version()})

    def code_files(self) -> list[str]:
        if not (is_repo(self.ws.code, self.ws.code_git) or is_repo(self.ws.code)):
            return []
        repo = self.ws.code_repo()
        return repo.files_at("HEAD") if repo.head() else []

    def _semantic(self, documents: list[Document]) -> list[str]:
        from spec_loop.reconcile_agent import ask

        problems, ignored = ask(self.ws, self.reconcile_command, documents)
        if ignored:
            self.journal.append("reconcile_agent.ignored", {"reason": ignored})
            self.notices.append(f"note: {ignored}; its answer was ignored and the deterministic checks stand")
        return problems

    def review(self, draft: Draft) -> Review:
        semantic = self._semantic if self.reconcile_command else None
        return review(self.store, draft, self.code_files(), semantic)

    def decide(self, draft: Draft, *, source: str) -> Decision:
        """Review and, if it holds, commit. Call inside locked()."""
        verdict = self.review(draft)
        if not verdict.accepted:
            decision = Decision(draft.name, False, self.store.version(), verdict.problems)
            self.journal.append("draft.refused", {"draft": draft.name, "source": source, "problems": list(verdict.problems),
                                                  "version": decision.version})
            return decision
        if verdict.unchanged:
            version = self.store.version()
        else:
            summary = f"{source} {draft.name}"
            version = self.store.commit(verdict.writes, summary, verdict.changes)
        self.journal.append("draft.accepted", {"draft": draft.name, "source": source, "version": version,
                                               "changes": verdict.changes, "commit": self.store.head()})
        return Decision(draft.name, True, version, changes=verdict.changes)
