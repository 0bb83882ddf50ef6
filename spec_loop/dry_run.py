"""The dry run at intake: every check and conformance test a change adds or changes runs once against the
code's current commit, measured the way plan measures it, before the change may land.

A check that runs and fails is the residual build will work on, and is accepted. A check that cannot run at
all is refused with its output: build would spend every attempt on it and never fix it. "Cannot run" is:

  - a `checks:` command the shell could not start (exit 127, not found; 126, not executable), unless the
    program is a path the requirement's `paths` let build create;
  - a check whose output says a file it needs does not exist, where that file is neither in the code nor
    among canon's files, and the requirement's `paths` do not let build create it;
  - a conformance test that pytest cannot collect because of the test itself: an error raised in canon's test
    file, or an import of a module that is neither installed nor in the code nor one build may create
    (an import of the code that fails because the code lacks what the test wants is the residual);
  - a conformance test none of whose tests ran: all skipped, or none collected;
  - a conformance test that needs a fixture or plugin canon does not have (spec_loop/test_setup.py).

Where there is doubt, the check counts as one that runs: refusing a good check costs more than letting a bad
one through (plan reports it as failing, with its output).

The run is plan's, reused: shared.checks.snapshot copies the code's commit into spec's own object store
(state/spec/objects.git) and exports it, with canon as the change would make it, into a fresh read-only
folder under state/spec/scratch; shared.checks.oracle builds the checks and runs them sandboxed (writes only to
their scratch; keys and the supervisor's credentials hidden), with the same time budget and limits. Canon as
proposed is an unreferenced commit in spec's object store, never in canon's history.
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from canon.check_paths import KnownPaths, as_path
from canon.model import Canon, Document, Requirement
from canon.pytest_config import INI
from canon.scope import matches
from canon.store import HELD_BACK_DIR, SEALED_DIR, TESTS_DIR, CanonStore, as_node_path
from shared.checks import snapshot
from shared.checks.oracle import HELD_BACK, SEALED, Result, build_checks, check_limits, run_checks
from shared.checks.store import PlanStore
from shared.environment import ProjectEnvError, project_env
from shared.errors import ExportError, GitError
from shared.git import Entry, GitRepo, is_repo
from shared.isolation.kinds import Confine
from shared.workspace import Workspace
from spec_loop import test_setup

OUTPUT_LINES = 15  # of a refused check's output, shown with the refusal
_NOT_FOUND = re.compile(r"^.*?: (?:line )?\d+: (?:exec: )?(.+?): (?:command )?not found\s*$", re.M)
_NOT_EXECUTABLE = re.compile(r"^.*?: (?:line )?\d+: (?:exec: )?(.+?): Permission denied\s*$", re.M)
_MISSING_FILE = (
    re.compile(r"can't open file '([^']+)': \[Errno 2\]"),  # python FILE
    re.compile(r"No such file or directory: '([^']+)'"),  # FileNotFoundError
    re.compile(r"file or directory not found: (\S+)"),  # pytest
    re.compile(r"cannot (?:open|access|stat) '?([^':\s]+)'?: No such file"),  # sh, ls, cat, stat
    re.compile(r"(?:^|\s)([^\s:'\"]+): No such file or directory", re.M),  # cat, grep, bash
)
_COLLECT_BLOCK = re.compile(r"^_+ ERROR collecting (\S+) _+$(.*?)(?=^_+ |^=+ |\Z)", re.M | re.S)
_RAISED = re.compile(r"^E\s+(\w+(?:\.\w+)*): (.*)$", re.M)
_NO_MODULE = re.compile(r"No module named '([^']+)'")
_CANNOT_IMPORT = re.compile(r"cannot import name '[^']+' from '([^']+)'(?: \(([^)]+)\))?")
_FRAME = re.compile(r"^(\S+\.py):\d+: in ", re.M)
_SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in [\d.]+s", re.M)


@dataclass(frozen=True)
class DryRun:
    refusals: tuple[str, ...] = ()  # one problem per check that cannot run, as file:line: ID: what, and its output
    notes: tuple[str, ...] = ()  # what a person should hear about the checks that ran
    private: tuple[str, ...] = ()  # what only the person who wrote them may hear (sealed cases' answers): not journaled
    journal_refusals: tuple[str, ...] | None = None  # the refusals as spec's journal keeps them: no held-back output


@dataclass(frozen=True)
class _Wanted:
    requirement: Requirement
    identity: str  # as shared.checks.oracle names it: "check:N" or "tests"


def new_checks(previous: dict[str, Requirement], proposed: dict[str, Requirement],
               changed_tests: set[str], changed_sealed: frozenset[str] = frozenset()) -> list[_Wanted]:
    """The checks a change adds or changes: new commands, new or changed `tests:`, tests whose files it changes."""
    wanted: list[_Wanted] = []
    for rid, req in sorted(proposed.items()):
        before = previous.get(rid)
        for index, command in enumerate(req.checks):
            if before is None or command not in before.checks:
                wanted.append(_Wanted(req, f"check:{index}"))
        files = {node.split("::", 1)[0] for node in req.tests}
        touched = any(changed == file or (PurePosixPath(changed).name == "conftest.py"
                                          and (PurePosixPath(file).is_relative_to(PurePosixPath(changed).parent)
                                               or changed == "conftest.py"))
                      for changed in changed_tests for file in files)
        if req.tests and (before is None or before.tests != req.tests or touched):
            wanted.append(_Wanted(req, "tests"))
        held = {node.split("::", 1)[0] for node in req.held_back}
        if held and (before is None or before.held_back != req.held_back or held & changed_tests):
            wanted.append(_Wanted(req, HELD_BACK))
        if req.sealed and (before is None or before.sealed != req.sealed or set(req.sealed) & changed_sealed):
            wanted.append(_Wanted(req, SEALED))
    return wanted


def dry_run(ws: Workspace, store: CanonStore, documents: Sequence[Document], writes: dict[str, str | None]) -> DryRun:
    """Run the change's new checks against the code's current commit; what cannot run is refused."""
    previous = {req.id: req for doc in store.load_documents() for req in doc.requirements}
    proposed = {req.id: req for doc in documents for req in doc.requirements}
    changed_tests = {as_node_path(path) for path, text in writes.items()
                     if as_node_path(path).startswith(f"{TESTS_DIR}/") and text is not None}
    if {INI, "conftest.py"} & set(writes):  # canon's own test set-up: every conformance test may measure otherwise
        changed_tests |= {"conftest.py"}
    changed_sealed = frozenset(path for path, text in writes.items() if path.startswith(f"{SEALED_DIR}/") and text)
    wanted = new_checks(previous, proposed, changed_tests, changed_sealed)
    if not wanted or not (is_repo(ws.code, ws.code_git) or is_repo(ws.code)):
        return DryRun()
    code = ws.code_repo()
    code_commit = code.head()
    if code_commit is None:
        return DryRun()
    objects = PlanStore(ws.role_dir("spec") / "objects.git")
    try:
        stored = objects.repo()
        canon_commit = _proposed_canon(stored, store, writes)
        limits = ws.config.plan
        snap = snapshot.take(ws.role_dir("spec") / "scratch", objects, code, code_commit, stored, canon_commit,
                             snapshot.Limits(limits.export_max_bytes, limits.export_max_files))
    except (ExportError, GitError) as exc:
        return DryRun(notes=(f"note: the new checks were not tried against the code (it could not be copied: "
                             f"{str(exc).splitlines()[0]}); plan measures them",))
    try:
        files = stored.files_at(canon_commit)
        canon = Canon(version=store.version() + 1, commit=canon_commit, documents=tuple(documents),
                      test_files=tuple(sorted(p for p in files if p.startswith(f"{TESTS_DIR}/"))),
                      held_back_files=tuple(sorted(p for p in files if p.startswith(f"{HELD_BACK_DIR}/"))),
                      sealed_files=tuple(sorted(p for p in files if p.startswith(f"{SEALED_DIR}/"))))
        keys = {(w.requirement.id, w.identity) for w in wanted}
        try:
            env = project_env(ws, "spec", stored, code_commit, snap.code)
        except ProjectEnvError as exc:
            return DryRun(refusals=(f"the new checks cannot run: {exc}",))
        # the person who wrote a held-back test reads its output here; spec's journal (build reads it) does not
        checks = [replace(c, reveal=True) for c in build_checks(canon, stored, stored, code_commit, limits.check_timeout, env)
                  if (c.requirement, c.identity) in keys]
        results = run_checks(checks, snap, jobs=limits.jobs, memo=None, confine=Confine(ws, "check", (snap.code,)),
                             limits=check_limits(ws.config), env=env)
        known = KnownPaths([*stored.files_at(code_commit), *stored.files_at(canon_commit)])
        refusals, notes, journaled, private = [], [], [], []
        for result in results:
            req = proposed[result.check.requirement]
            if result.check.identity == SEALED:  # never refused: a case the code cannot answer yet is the residual
                notes.append(_note(result, code_commit))
                private += [f"  {line}" for line in result.excerpt.splitlines()[1:]]
                continue
            tests_ran = not result.passed and result.check.identity in ("tests", HELD_BACK)
            why = _cannot_run(result, req, snap, known) or (  # or for want of the project's test set-up
                test_setup.cannot_run(result.excerpt, stored, code_commit, env) if tests_ran else "")
            if why:
                refusals.append(_refusal(result, req, why, code_commit))
                journaled.append(refusals[-1] if result.check.identity != HELD_BACK else
                                 f"{req.source}: {req.id}: its held-back tests cannot run at all against the code at "
                                 f"{code_commit[:12]} (what and why were shown to the person who submitted them)")
            else:
                notes.append(_note(result, code_commit))
        if any(r.check.identity in ("tests", HELD_BACK) for r in results):
            unfrozen = test_setup.unfrozen_options(stored, code_commit, stored.show(canon_commit, INI))
            notes += [unfrozen] if unfrozen else []
        return DryRun(tuple(refusals), tuple(notes), private=tuple(private), journal_refusals=tuple(journaled))
    finally:
        snapshot.release(snap)


def _proposed_canon(stored: GitRepo, store: CanonStore, writes: dict[str, str | None]) -> str:
    """Canon as the change would make it: a commit in spec's object store on top of canon's last version."""
    head = store.head()
    if head is not None:
        stored = PlanStore(stored.git_dir).fetch(store.git, head)
        parent = head
    else:
        empty = stored.command("hash-object", "-t", "tree", "-w", "--stdin", input=b"").stdout.decode().strip()
        parent = stored.command("commit-tree", empty, input=b"canon before its first version\n").stdout.decode().strip()
    entries: dict[str, Entry | None] = {}
    for path, text in writes.items():
        if text is None:
            entries[path] = None
            continue
        blob = stored.command("hash-object", "-w", "--no-filters", "--stdin", input=text.encode("utf-8"))
        if blob.returncode != 0:
            raise GitError(f"cannot store {path} in {stored.git_dir}: {blob.stderr.decode(errors='replace').strip()}")
        entries[path] = Entry("100644", blob.stdout.decode().strip())
    commit, _ = stored.commit_entries(parent, entries, "canon as the change proposes it (a dry run)", {}, role="spec")
    return commit


def _cannot_run(result: Result, req: Requirement, snap: snapshot.Snapshot, known: KnownPaths) -> str:
    """Why the check cannot run at all, or "" when it ran (passing or failing)."""
    if result.passed or result.timed_out:
        return ""
    output = result.excerpt
    if result.check.identity not in ("tests", HELD_BACK):
        return _shell_cannot_run(result.exit_code, output, req, snap, known)
    return _tests_cannot_run(output, req, snap, known)


def _shell_cannot_run(exit_code: int | None, output: str, req: Requirement, snap: snapshot.Snapshot,
                      known: KnownPaths) -> str:
    for code, pattern, what in ((127, _NOT_FOUND, "command not found"), (126, _NOT_EXECUTABLE, "not executable")):
        match = pattern.search(output) if exit_code == code else None
        if match:
            program = match.group(1).strip()
            path = _code_path(program, snap) if "/" in program else None
            if path is not None and req.paths and matches(path, req.paths):
                return ""  # a program build may create (or make executable)
            return f"{program}: {what} (exit {code})"
    missing = _missing_files(output, req, snap, known)
    return f"it names {', '.join(missing)}, which does not exist" if missing else ""


def _tests_cannot_run(output: str, req: Requirement, snap: snapshot.Snapshot, known: KnownPaths) -> str:
    for file, block in _COLLECT_BLOCK.findall(output):
        raised = _RAISED.search(block)
        if raised:
            why = _collection_error(file, raised.group(1), raised.group(2), _FRAME.findall(block), req, snap, known)
            if why:
                return why
    if "<no test found>" in output or "<the whole file>" in output:
        return "no tests ran: a file it names defines no test pytest collects"
    counts = _summary_counts(output)
    ran = sum(counts.get(kind, 0) for kind in ("passed", "failed", "xfailed", "xpassed"))  # canaries are not counted
    if counts and ran <= 0 and not counts.get("error") and not counts.get("errors"):
        return ("no tests ran: all of its tests were skipped or not collected. A conformance test that skips "
                "measures nothing: make it fail until the code has what it needs")
    return ""


def _collection_error(file: str, kind: str, message: str, frames: list[str], req: Requirement,
                      snap: snapshot.Snapshot, known: KnownPaths) -> str:
    where = f"pytest cannot collect {file}"
    if kind.endswith("ModuleNotFoundError"):
        module = _NO_MODULE.search(message)
        if module and not _module_may_exist(module.group(1), req, known):
            name = module.group(1)
            below = _elsewhere_in_code(name, known)
            hint = (f"; the code has {below}/, but tests import from the code's root, not from {below.rsplit('/', 1)[0]}/ "
                    f"(say so with [env] import_roots = [\"{below.rsplit('/', 1)[0]}\"] in banach.toml, or in the "
                    "project's pytest pythonpath)" if "/" in below else "")
            return (f"{where}: it imports {name}, which is not installed, not in the code, and not a path "
                    f"{req.id} lets build create (paths: {', '.join(req.paths) or 'none'}){hint}. If {name} is a "
                    f"third-party package the tests need, add it to the project's dependencies (pyproject.toml's "
                    f"test extra, or a requirements file) or to [env] requirements in banach.toml")
        return ""
    if kind.endswith("ImportError"):
        cannot = _CANNOT_IMPORT.search(message)
        if cannot and cannot.group(2) and _code_path(cannot.group(2), snap) is None \
                and not _module_may_exist(cannot.group(1), req, known):
            return f"{where}: {kind}: {message.strip()} (a module outside the code, which build cannot change)"
        return ""
    if frames and _in_canon(frames[-1], snap):
        return f"{where}: {kind}: {message.strip()}, raised in the test file itself ({_shown_path(frames[-1], snap)})"
    return ""


def _module_may_exist(module: str, req: Requirement, known: KnownPaths) -> bool:
    """Whether the module is the code's own (its top package is in the code), or build may create it within the
    requirement's paths. Anything else is a module the tests expect installed."""
    parts = module.split(".")
    if known.exists(f"{parts[0]}.py") or known.exists(parts[0]):
        return True
    path = "/".join(parts)
    return bool(req.paths) and any(matches(candidate, req.paths) for candidate in (f"{path}.py", f"{path}/__init__.py"))


def _elsewhere_in_code(module: str, known: KnownPaths) -> str:
    """Where the code has a package of that name below its root (a src/ layout), or ""."""
    top = module.split(".")[0]
    for folder in sorted(known.folders, key=len):
        if PurePosixPath(folder).name == top:
            return folder
    return ""


def _summary_counts(output: str) -> dict[str, int]:
    found = _SUMMARY.findall(output)
    if not found:
        return {}
    counts: dict[str, int] = {}
    for part in found[-1].split(", "):
        number, _, kind = part.partition(" ")
        if number.isdigit():
            counts[kind] = int(number)
    return counts


def _missing_files(output: str, req: Requirement, snap: snapshot.Snapshot, known: KnownPaths) -> list[str]:
    missing: list[str] = []
    for pattern in _MISSING_FILE:
        for raw in pattern.findall(output):
            path = _code_path(raw, snap)
            if path is None or as_path(path) is None or path in missing or known.exists(path):
                continue
            if req.paths and matches(path, req.paths):
                continue  # build may create it: that is the residual
            missing.append(path)
    return missing


def _resolved(name: str, snap: snapshot.Snapshot) -> Path:
    """A path as the check printed it, made absolute: checks run in the code's root."""
    return Path(os.path.normpath(snap.code / name.strip().strip("'\"")))


def _code_path(name: str, snap: snapshot.Snapshot) -> str | None:
    """A path as the check saw it, relative to the code's root; None when it points outside the code."""
    if not name.strip().strip("'\""):
        return None
    path = _resolved(name, snap)
    return str(path.relative_to(snap.code)) if path.is_relative_to(snap.code) else None


def _in_canon(frame: str, snap: snapshot.Snapshot) -> bool:
    return any(_resolved(frame, snap).is_relative_to(root) for root in (snap.canon, snap.held_back) if root)


def _shown_path(frame: str, snap: snapshot.Snapshot) -> str:
    path = _resolved(frame, snap)
    for root in (snap.canon, snap.held_back, snap.code):
        if root and path.is_relative_to(root):
            return str(path.relative_to(root))
    return frame


def _shown_output(result: Result) -> str:
    """The output (shared.measurement.conformance already took Banach's canaries out of it), less the void line."""
    return "\n".join(line for line in result.excerpt.splitlines() if not line.startswith("measurement void"))


def _indented(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()][-OUTPUT_LINES:]
    return "\n".join("      | " + line for line in lines) or "      | (it printed nothing)"


def _refusal(result: Result, req: Requirement, why: str, code_commit: str) -> str:
    if result.check.identity == "tests":
        where, what = str(req.source), f"its conformance tests ({', '.join(req.tests)})"
    elif result.check.identity == HELD_BACK:
        where, what = str(req.source), f"its held-back tests ({', '.join(req.held_back)})"
    else:
        index = int(result.check.identity.split(":", 1)[1])
        where, what = req.source.of_check(index), f"the check `{result.check.label}`"
    return (f"{where}: {req.id}: {what} cannot run at all against the code at {code_commit[:12]}: {why}. A check that "
            "runs and fails is accepted (it is what build works on); one that cannot run would use up every attempt. "
            f"Correct it, or make the code's commit have what it needs first. Its output:\n{_indented(_shown_output(result))}")


def _note(result: Result, code_commit: str) -> str:
    check = result.check
    names = {"tests": "conformance tests", HELD_BACK: "held-back tests", SEALED: "sealed cases"}
    if check.identity == SEALED:
        return f"dry run at code {code_commit[:12]}: {check.requirement} sealed cases: {result.excerpt.splitlines()[0]}"
    what = f"{check.requirement} {names.get(check.identity, repr(check.label))}"
    if result.passed:
        return (f"dry run at code {code_commit[:12]}: {what} passes already: build has nothing to do for it, and plan "
                "counts it met. If it should fail until the code changes, it does not measure that change (does it "
                "fail in the project only with the project's fixtures or pytest options?)")
    if result.timed_out:
        return f"dry run at code {code_commit[:12]}: {what} ran out of its {check.timeout:g}s; plan will count it failing"
    return f"dry run at code {code_commit[:12]}: {what} runs and fails (the residual build will work on)"
