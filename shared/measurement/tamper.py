"""The tamper scan: what code under test has no business doing, found in its syntax (never by running it).

Code that runs inside the test process can reach the measurement itself: walk the garbage collector to the
runner's reporter, open /proc/self/fd, exit before pytest finishes, patch pytest's reports, hooks or sys.modules,
trace frames up to the runner's locals. The report channel, the finish rule and the canaries
(shared/measurement/conformance.py) make many of those fail or void the run; this scan names them where they are
written, so that a kept turn or a certificate never rests on code that tried. It reads through the usual ways of
saying the same thing otherwise (`sys.modules.get`, `vars(...)[...]`, `setattr`, `operator.attrgetter`, ...:
tamper_names.py, tamper_finder.py), and knows its spellings by name (tamper_spellings.py). It is a tripwire, not a
proof: code built to hide (names assembled at run time and used in ways it does not know, a compiled module it
cannot read, code run from a file that is not Python) can pass it, and SECURITY.md says so.

    hits = scan({"pkg/mod.py": b"..."})         # every hit, with file, line and what it does
    blocking = unallowed(hits, canon)           # the hits no requirement owning that file allows

Build and plan hold against a change only the hits it added (tamper_diff.py). A requirement allows a kind in canon
(`allows: exit, modules`); the allowance covers the files its `paths:` match.
"""
from __future__ import annotations

import ast
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from shared.measurement.tamper_finder import Finder
from shared.measurement.tamper_spellings import COMPILED_C, COMPILED_PYTHON

if TYPE_CHECKING:  # canon's model names these kinds (canon/model.py imports KINDS from here)
    from canon.model import Canon, Requirement
    from shared.git import GitRepo

SCANNED = (".py", ".pyw", ".pth", *COMPILED_PYTHON, *COMPILED_C)  # what code can be imported from
MAX_BYTES = 2_000_000  # a larger Python file is a hit in itself: code under test has no need of one
KINDS = {
    "gc": "walks the garbage collector or the class tree, where the test runner's own objects are",
    "proc": "names /proc or /dev/fd, where the process's descriptors and memory are",
    "descriptors": "writes to, opens or closes raw file descriptors",
    "exit": "ends, forks or signals the process outside the test's control",
    "modules": "replaces or walks modules, their attributes, import hooks or builtins",
    "pytest": "reaches the test runner: pytest's internals or hooks, the runner's own module, Banach's settings",
    "frames": "reads or traces other code's frames or namespaces",
    "exec": "runs code built from strings or data, or looks up names built at run time",
    "rename": "renames, links or replaces files",
    "fifo": "makes FIFOs or device nodes",
    "ctypes": "calls into C, where anything in the process can be patched",
    "unreadable": "could not be read as Python",
}


@dataclass(frozen=True)
class Hit:
    path: str
    line: int
    kind: str
    what: str  # the construct, described
    written: str = ""  # the construct as written (its syntax, without layout): what a change is compared by

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what} ({KINDS[self.kind]})"

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What makes two hits the same hit wherever their lines are: file, kind and construct."""
        return self.path, self.kind, self.what, self.written


def scanned(path: str) -> bool:
    """Whether the scan reads the file: Python source, .pth files, and what is imported without source."""
    return path.endswith(SCANNED) or ".so." in PurePosixPath(path).name


def _unreadable(path: str, content: bytes) -> Hit | None:
    """A file the scan cannot read as Python source is a hit of its own, named by its content (so that any change
    to it is a new hit)."""
    digest = hashlib.sha256(content).hexdigest()[:12]
    if path.endswith(".pth"):
        return Hit(path, 1, "modules", "a .pth file (site runs its import lines at start-up)", digest)
    if path.endswith(COMPILED_PYTHON):
        return Hit(path, 1, "unreadable", f"compiled Python, imported without its source (sha256 {digest})", digest)
    if not path.endswith((".py", ".pyw")):
        return Hit(path, 1, "ctypes", f"a compiled extension module: C the scan cannot read (sha256 {digest})", digest)
    if len(content) > MAX_BYTES:
        return Hit(path, 1, "unreadable", f"{len(content)} bytes, over the scan's {MAX_BYTES}", digest)
    return None


def scan(files: Mapping[str, bytes]) -> list[Hit]:
    """Every hit in the files among `files` (path -> content) that code can be imported from; others are not read."""
    hits: list[Hit] = []
    for path, content in sorted(files.items()):
        if not scanned(path):
            continue
        whole = _unreadable(path, content)
        if whole is not None:
            hits.append(whole)
            continue
        try:
            tree = ast.parse(content, filename=path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # what does not parse cannot be imported either: its tests fail on their own
        finder = Finder()
        try:
            finder.visit(tree)
        except RecursionError:
            finder.hits.append((1, "unreadable", "nested too deeply to scan", hashlib.sha256(content).hexdigest()[:12]))
        hits.extend(Hit(path, *found) for found in finder.hits)
    return sorted(set(hits), key=lambda h: (h.path, h.line, h.kind, h.what, h.written))


def scan_blobs(repo: GitRepo, blobs: Mapping[str, str]) -> list[Hit]:
    """scan() of these files of a repository (path -> blob id), reading only those it scans, in one git call."""
    python = {path: blob for path, blob in blobs.items() if scanned(path)}
    contents = repo.blobs(sorted(set(python.values())))
    return scan({path: contents[blob] for path, blob in python.items() if blob in contents})


def unallowed(hits: list[Hit], canon: Canon, requirements: tuple[str, ...] | None = None) -> list[Hit]:
    """The hits that no requirement owning the file (its `paths:` match) allows; `requirements` narrows the owners
    to those (an item's), None means any requirement of canon."""
    from canon.scope import matches

    owners = [canon.requirements[rid] for rid in (requirements or tuple(canon.requirements)) if rid in canon.requirements]
    return [hit for hit in hits
            if not any(hit.kind in req.allows and matches(hit.path, req.paths) for req in owners)]


def standing(repo: GitRepo, rev: str, requirements: Sequence[Requirement], *, shown: int = 5) -> list[str]:
    """Before work starts: per requirement, one note on the hits already in the code its `paths:` match at rev that
    it does not allow, with the `allows:` line that would accept them. Turns and passes hold only what a change
    adds against anyone (tamper_diff.py), so these are a person's to know of, not an item."""
    from canon.scope import matches

    owned = [req for req in requirements if req.paths]
    blobs = {path: blob for path, blob in repo.blob_ids(rev).items() if any(matches(path, req.paths) for req in owned)}
    hits = scan_blobs(repo, blobs) if blobs else []
    notes = []
    for req in owned:
        mine = [hit for hit in hits if matches(hit.path, req.paths) and hit.kind not in req.allows]
        if not mine:
            continue
        listed = "; ".join(str(hit) for hit in mine[:shown]) + (f"; and {len(mine) - shown} more" if len(mine) > shown else "")
        kinds = sorted({hit.kind for hit in mine} - {"unreadable"})
        allow = (f"if {req.id}'s code is meant to, add `allows: {', '.join(sorted({*req.allows, *kinds}))}` to it "
                 f"({req.source})" if kinds else "no `allows:` accepts what the scan cannot read")
        notes.append(f"note: {req.source}: {req.id}: the code its paths match at {rev[:12]} already has what the "
                     f"tamper scan looks for: {listed}. A turn is judged on the hits it adds, so this old code is not "
                     f"held against it, but a turn that writes more of it, or rewrites one of these lines' constructs, "
                     f"is rolled back; {allow}.")
    return notes
