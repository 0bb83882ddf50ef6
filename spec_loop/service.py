"""The spec role's state: its journal, its lock, and the one path by which a reviewed draft becomes a version."""
from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from canon.model import Document
from canon.store import CanonStore
from shared.atomic import file_lock
from shared.git import is_repo
from shared.journal import Journal
from shared.workspace import Workspace
from spec_loop.draft import Draft, Review, locate, recorded_names, review


@dataclass(frozen=True)
class Decision:
    """What became of one change: its drafts landed as one version, or none of them did."""

    drafts: tuple[str, ...]
    accepted: bool
    version: int
    problems: tuple[str, ...] = ()
    changes: dict[str, list[str]] | None = None

    @property
    def draft(self) -> str:
        return ", ".join(self.drafts)

    def problems_of(self, name: str) -> tuple[list[str], list[str]]:
        """(the problems in the draft called name, the problems elsewhere in its change)."""
        own = [problem for problem in self.problems if problem.startswith(name + ":")]
        return own, [problem for problem in self.problems if problem not in own]

    def describe(self) -> str:
        if not self.accepted:
            together = (f" (one change: none of it landed, canon stays at v{self.version}; fix the files named and "
                        "give all of them again, together)") if len(self.drafts) > 1 else ""
            return f"refused {self.draft}{together}:\n" + "\n".join(f"  {p}" for p in self.problems)
        if not self.changes or not any(self.changes.values()):
            return f"accepted {self.draft}: canon is already v{self.version}, nothing changed"
        names = {"tests": "conformance tests", "held_back": "held-back tests of"}
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
        """Canon's work tree differs from its last version: a hand edit, or a crash between writing canon's files and
        committing. Each changed file is set aside (state/spec/set-aside/TIME/PATH), where a person finds it and can
        submit it through spec-loop, and canon is put back; the notice says where it went."""
        dirty = self.store.dirty()
        if not dirty:
            return
        folder = self.ws.role_dir("spec") / "set-aside" / time.strftime("%Y%m%d-%H%M%S")
        kept = []
        for path in dirty:
            source = self.ws.canon / path
            if source.is_file() and not source.is_symlink():
                (folder / path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, folder / path)
                kept.append(path)
        self.store.git.rollback("HEAD")
        version = self.store.version()
        self.journal.append("recovered", {"reason": "canon work tree differed from its last version", "files": dirty,
                                          "version": version, "set_aside": self.ws.relative(folder) if kept else ""})
        for path in dirty:
            where = (f"the edited text is in {self.ws.relative(folder / path)}; submit it with spec-loop add "
                     f"{self.ws.relative(folder / path)} (or spec-loop edit {path})") if path in kept else "it was removed"
            self.notices.append(f"canon: {path} was changed outside spec-loop, which alone writes canon; canon stays at "
                                f"v{version}, and {where}")

    def code_files(self) -> list[str] | None:
        """The code's files at its current commit, or None when there is no code to look in. Names only:
        the code is written by an untrusted agent, so nothing of it is read, checked out or run."""
        if not (is_repo(self.ws.code, self.ws.code_git) or is_repo(self.ws.code)):
            return None
        repo = self.ws.code_repo()
        return repo.files_at("HEAD") if repo.head() else None

    def _semantic(self, documents: list[Document]) -> list[str]:
        from spec_loop.reconcile_agent import ask

        problems, ignored = ask(self.ws, self.reconcile_command, documents)
        if ignored:
            self.journal.append("reconcile_agent.ignored", {"reason": ignored})
            self.notices.append(f"note: {ignored}; its answer was ignored and the deterministic checks stand")
        return problems

    def review(self, drafts: Sequence[Draft]) -> Review:
        semantic = self._semantic if self.reconcile_command else None
        return review(self.store, drafts, self.code_files(), semantic)

    def _dry_run(self, verdict: Review) -> Review:
        """The change's new checks, run once against the code's current commit: one that cannot run refuses it. And
        the tamper scan's hits already in the code of the requirements it adds or re-scopes, said once."""
        from spec_loop.dry_run import dry_run
        from spec_loop.forewarn import standing_hits, unsealed

        tried = dry_run(self.ws, self.store, verdict.documents, verdict.writes)
        previous = {req.id: req for doc in self.store.load_documents() for req in doc.requirements}
        proposed = {req.id: req for doc in verdict.documents for req in doc.requirements}
        tried = replace(tried, notes=tried.notes + standing_hits(self.ws, self.store, verdict.documents)
                        + unsealed(previous, proposed))
        if tried.refusals or tried.notes:  # the refusals themselves are journaled with the refused draft
            self.journal.append("draft.dry_run", {"refused": len(tried.refusals), "ran": list(tried.notes)})
        if tried.refusals:
            return Review(verdict.drafts, tuple(locate(problem, verdict.drafts) for problem in tried.refusals),
                          journal_problems=tried.journal_refusals)
        self.notices.extend(tried.notes)
        self.notices.extend(tried.private)  # the sealed cases' answers, for the person: never journaled
        return verdict

    def decide(self, draft: Draft, *, source: str) -> Decision:
        """One draft as a change of its own. Call inside locked()."""
        return self.decide_change([draft], source=source)

    def decide_change(self, drafts: Sequence[Draft], *, source: str) -> Decision:
        """Review the drafts together and, if they hold, commit them as one version. Call inside locked()."""
        verdict = self.review(drafts)
        names = tuple(draft.name for draft in verdict.drafts)
        if verdict.accepted and not verdict.unchanged:
            verdict = self._dry_run(verdict)
        if not verdict.accepted:
            decision = Decision(names, False, self.store.version(), verdict.problems)
            shown = verdict.problems if verdict.journal_problems is None else verdict.journal_problems
            self.journal.append("draft.refused", {"draft": decision.draft, "drafts": list(names), "source": source,
                                                  "problems": list(shown), "version": decision.version})
            return decision
        names = recorded_names(verdict, self.store)
        if verdict.unchanged:
            version = self.store.version()
        else:
            version = self.store.commit(verdict.writes, f"{source} {', '.join(names)}", verdict.changes)
        self.journal.append("draft.accepted", {"draft": ", ".join(names), "drafts": list(names), "source": source,
                                               "version": version, "changes": verdict.changes,
                                               "commit": self.store.head()})
        return Decision(names, True, version, changes=verdict.changes)
