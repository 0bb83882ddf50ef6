"""Canon's versioned store: its own git repository, one commit per accepted change, a monotonic version.

Layout inside canon/: requirements/*.md (the documents), tests/ (conformance tests, tier 1), held_back/tests/
(the held-back tests: a requirement's `held_back: tests/test_x.py` is stored at held_back/tests/test_x.py) and
sealed/ (files of sealed cases, named as stored: `sealed: sealed/slug.json`). Only plan and spec read held_back/ and
sealed/: build exports canon without them (canon/visible.py), plan's checks get neither in their copy of canon (the
sealed cases' expected values never leave plan's process), and nothing build starts reads canon's repository.
Readers load a version from git objects, never from the work tree, so what they see is exactly V.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from canon.model import Canon, Document
from canon.parser import parse_document
from shared.contracts import trailers
from shared.errors import CanonError
from shared.git import GitRepo, is_repo
from shared.measurement.suites import is_test_file

REQUIREMENTS_DIR = "requirements"
TESTS_DIR = "tests"
HELD_BACK_DIR = "held_back"
SEALED_DIR = "sealed"  # files of sealed cases: read by plan and spec alone, never exported (shared/measurement/cases.py)
VERSION_TRAILER = trailers.CANON_VERSION


def held_back_path(node_path: str) -> str:
    """Where a held-back test named tests/... by its requirement is stored in canon."""
    return f"{HELD_BACK_DIR}/{node_path}"


def as_node_path(canon_path: str) -> str:
    """The name a requirement gives a test file stored at canon_path (held_back/tests/x.py is tests/x.py)."""
    return canon_path.removeprefix(f"{HELD_BACK_DIR}/")


@dataclass(frozen=True)
class VersionEntry:
    version: int
    commit: str
    time: str
    summary: str
    added: tuple[str, ...]
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    tests: tuple[str, ...] = ()  # conformance test files the version added or changed


class CanonStore:
    def __init__(self, path: Path) -> None:
        if not is_repo(path):
            raise CanonError(f"{path} is not a canon repository; create the workspace with 'banach init'")
        self.path = path
        self.git = GitRepo(path)

    @classmethod
    def create(cls, path: Path) -> CanonStore:
        GitRepo.init(path)
        return cls(path)

    def head(self) -> str | None:
        return self.git.head()

    def version(self, rev: str = "HEAD") -> int:
        if self.head() is None:
            return 0
        value = self.git.trailer(rev, VERSION_TRAILER)
        try:
            return int(value)
        except ValueError:
            raise CanonError(
                f"{self.path}: commit {rev} has no '{VERSION_TRAILER}' trailer; canon was changed outside spec-loop. "
                "Reset canon to its last version (git -C canon log) and make the change with 'spec-loop edit'."
            ) from None

    def files(self, rev: str = "HEAD") -> dict[str, str]:
        """Path -> blob id of every file in canon at rev."""
        if self.head() is None:
            return {}
        return self.git.blob_ids(rev)

    def read(self, rev: str, path: str) -> str | None:
        return self.git.show(rev, path)

    def load(self, rev: str = "HEAD") -> Canon:
        head = self.head()
        if head is None:
            return Canon(version=0, commit="", documents=())
        commit = self.git._git("rev-parse", rev)
        files = self.files(commit)
        documents = []
        for path in sorted(files):
            if path.startswith(f"{REQUIREMENTS_DIR}/") and path.endswith(".md"):
                text = self.read(commit, path) or ""
                documents.append(parse_document(text, path))
        tests = tuple(sorted(p for p in files if p.startswith(f"{TESTS_DIR}/")))
        held = tuple(sorted(p for p in files if p.startswith(f"{HELD_BACK_DIR}/")))
        sealed = tuple(sorted(p for p in files if p.startswith(f"{SEALED_DIR}/")))
        return Canon(version=self.version(commit), commit=commit, documents=tuple(documents), test_files=tests,
                     held_back_files=held, sealed_files=sealed)

    def test_sources(self, rev: str = "HEAD") -> dict[str, str]:
        """Every conformance test file's text by the name requirements give it (tests/...), held-back ones too."""
        return {as_node_path(p): self.read(rev, p) or "" for p in self.files(rev)
                if p.startswith((f"{TESTS_DIR}/", f"{HELD_BACK_DIR}/{TESTS_DIR}/")) and (p.endswith(".py") or is_test_file(p))}

    def load_documents(self, rev: str = "HEAD") -> list[Document]:
        return list(self.load(rev).documents) if self.head() else []

    def commit(self, writes: dict[str, str | None], summary: str, changes: dict[str, list[str]]) -> int:
        """Write (or, for None, delete) files and commit them as the next version. Only spec-loop calls this."""
        version = self.version() + 1
        for rel, content in writes.items():
            target = self.path / rel
            if content is None:
                target.unlink(missing_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content, encoding="utf-8")
        body = [f"canon v{version}: {summary}", ""]
        for label in ("added", "changed", "removed", "tests"):
            if changes.get(label):
                body.append(f"{label}: {', '.join(changes[label])}")
        trailers = {VERSION_TRAILER: str(version)}
        for label in ("added", "changed", "removed", "tests"):
            if changes.get(label):
                trailers[f"Canon-{label.capitalize()}"] = ", ".join(changes[label])
        self.git.commit_all("\n".join(body), trailers, role="spec", allow_empty=True)
        return version

    def dirty(self) -> list[str]:
        return [change.path for change in self.git.changes()]

    def history(self) -> list[VersionEntry]:
        if self.head() is None:
            return []
        fmt = "%x00".join([
            "%H", "%cI", "%s",
            f"%(trailers:key={VERSION_TRAILER},valueonly)",
            "%(trailers:key=Canon-Added,valueonly)",
            "%(trailers:key=Canon-Changed,valueonly)",
            "%(trailers:key=Canon-Removed,valueonly)",
            "%(trailers:key=Canon-Tests,valueonly)",
        ]) + "%x01"
        entries = []
        for record in self.git.log(fmt).split("\x01"):
            parts = [p.strip() for p in record.strip("\n").split("\x00")]
            if len(parts) < 8 or not parts[3].isdigit():
                continue

            def split(value: str) -> tuple[str, ...]:
                return tuple(v.strip() for v in value.split(",") if v.strip())

            entries.append(VersionEntry(int(parts[3]), parts[0], parts[1], parts[2], split(parts[4]), split(parts[5]),
                                        split(parts[6]), split(parts[7])))
        return entries
