"""The computational oracle: every check and conformance test of canon V, run against a clean snapshot of C.

Checks run in parallel up to the core count, each a fresh process in a view of its own (shared/isolation/kinds.py:
the commit's export read-only, its own folder, the project's environment, no network unless its requirement says
so, uid 65534 under root), with a cgroup, memory, process and time limits of its own: no check can write, read or
trace another's run, or reach anything else of the machine.
A timed-out check fails with a constant fingerprint, so it can never read as progress. The tamper scan
(shared/measurement/tamper.py) of the files changed since the workspace's start is a failing result of its own.

Memo: a check's result is reused when its key matches. The key covers exactly what the check reads:
the command (or the node ids), its time budget, the code (the tree id of C, or, when the requirement
lists `reads`, the blob ids of the files those globs match), and for conformance tests the tree id of
canon's tests/ at V. Anything outside that key (the machine, installed packages, the network) is assumed
not to change the verdict; `plan-loop certify` ignores the memo for exactly that reason.
"""
from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from canon.model import Canon, Requirement
from canon.scope import matches
from canon.store import HELD_BACK_DIR
from shared.checks.snapshot import Snapshot
from shared.config import Config
from shared.contracts.fix_plan import HELD_BACK_EVIDENCE, SEALED_EVIDENCE
from shared.environment import OWN, ProjectEnv
from shared.git import GitRepo
from shared.isolation.kinds import Confine
from shared.journal import Memo, canonical
from shared.measurement import conformance, polyglot, sealed, tamper, tamper_diff
from shared.measurement.cases import load_cases
from shared.measurement.excerpt import excerpt as bounded
from shared.process import Limits, Outcome, Request, run

EXCERPT_LINES = 30
HELD_BACK = "held_back"  # the identity of a requirement's held-back run
SEALED = "sealed"  # ... and of its sealed run
HELD_BACK_LABEL = HELD_BACK_EVIDENCE  # what fix_plan and people read of it: never a file, a test name or output
TIMEOUT_FINGERPRINT = "timeout"
_VOLATILE = re.compile(r"\d+(\.\d+)?s\b|0x[0-9a-f]+|/tmp/\S+|\d{4}-\d\d-\d\dT\S+")


@dataclass(frozen=True)
class Check:
    requirement: str
    identity: str  # stable within the requirement: "check:0", "tests"
    argv: tuple[str, ...]  # the command, or for "tests" canon's node ids (run through shared.measurement.conformance)
    label: str
    timeout: float
    memo_key: str
    network: str = "none"  # the requirement's `network:` in canon: "none" runs it cut off, "open" with the machine's
    reveal: bool = False  # a held-back or sealed run's own output kept (spec's dry run, for the person who wrote it)
    sealed: tuple[tuple[str, str], ...] = ()  # a sealed run's cases: (canon path, the file's text), plan's alone


@dataclass(frozen=True)
class Result:
    check: Check
    passed: bool
    exit_code: int | None
    timed_out: bool
    excerpt: str
    fingerprint: str
    duration: float
    memoized: bool
    void: bool = False  # its run measured nothing (shared/measurement/conformance.py): plan's to know, no one else's


def fingerprint(output: str, timed_out: bool) -> str:
    if timed_out:
        return TIMEOUT_FINGERPRINT
    normalized = _VOLATILE.sub("#", output)
    return hashlib.sha256(normalized.encode()).hexdigest()[:16]


def _code_key(req: Requirement, tree: str, blobs: Callable[[], dict[str, str]]) -> str:
    if not req.reads:
        return "tree:" + tree
    chosen = {path: blob for path, blob in blobs().items() if matches(path, req.reads)}
    return "reads:" + hashlib.sha256(canonical(chosen).encode()).hexdigest()


def build_checks(canon: Canon, canon_repo: GitRepo, code: GitRepo, code_commit: str, timeout: float,
                 env: ProjectEnv | None = None) -> list[Check]:
    """env: the environment the checks run in; its key and import roots are part of every memo key."""
    env_key = {"env": env.key, "roots": list(env.roots)} if env is not None and (env.key or env.roots != ("",)) else {}
    tests_tree = canon_repo.tree_id(canon.commit, "tests") if canon.test_files else ""
    set_up = [canon_repo.show(canon.commit, path) or "" for path in ("pytest.ini", "conftest.py")]  # at canon's root
    if any(set_up) and tests_tree:  # canon's own test set-up decides the verdict too (shared/measurement/plugins.py)
        tests_tree += ":" + hashlib.sha256("\0".join(set_up).encode()).hexdigest()
    cache: dict[str, dict[str, str]] = {}

    def blobs() -> dict[str, str]:
        if "b" not in cache:
            cache["b"] = code.blob_ids(code_commit)
        return cache["b"]

    tree = code.tree_id(code_commit)
    held_tree = canon_repo.tree_id(canon.commit, HELD_BACK_DIR) if any(r.held_back for r in canon.requirements.values()) \
        else ""
    checks = []
    for req in sorted(canon.requirements.values(), key=lambda r: r.id):
        code_key = _code_key(req, tree, blobs) if req.measured else ""
        net = {"net": req.network} if req.network != "none" else {}
        for index, command in enumerate(req.checks):
            key = canonical({"k": "check", "cmd": command, "t": timeout, "code": code_key, **env_key, **net})
            checks.append(Check(req.id, f"check:{index}", ("/bin/sh", "-c", command), command, timeout,
                                hashlib.sha256(key.encode()).hexdigest(), req.network))
        if req.tests:
            key = canonical({"k": "tests", "nodes": req.tests, "t": timeout, "code": code_key, "canon": tests_tree,
                             **env_key, **net})
            checks.append(Check(req.id, "tests", tuple(req.tests), polyglot.label(req.tests), timeout,
                                hashlib.sha256(key.encode()).hexdigest(), req.network))
        if req.held_back:
            key = canonical({"k": "held_back", "nodes": req.held_back, "t": timeout, "code": code_key,
                             "canon": held_tree, **env_key, **net})
            checks.append(Check(req.id, HELD_BACK, tuple(req.held_back), HELD_BACK_LABEL, timeout,
                                hashlib.sha256(key.encode()).hexdigest(), req.network))
        if req.sealed:
            texts = tuple((path, canon_repo.show(canon.commit, path) or "") for path in req.sealed)
            key = canonical({"k": "sealed", "cases": [hashlib.sha256(text.encode()).hexdigest() for _, text in texts],
                             "code": code_key, **env_key, **net})
            checks.append(Check(req.id, SEALED, (), SEALED_EVIDENCE, timeout, hashlib.sha256(key.encode()).hexdigest(),
                                req.network, sealed=texts))
    return checks


@dataclass(frozen=True)
class _Prepared:
    """A check ready to run (its requests, run in order); for conformance tests and sealed cases, what their outcomes
    will be judged against."""

    requests: tuple[Request, ...]
    conformance: conformance.Run | None = None
    sealed: sealed.SealedRun | None = None
    any_run: polyglot.AnyRun | None = None  # tests in other languages: one run per file (shared/measurement/polyglot.py)

    def close(self) -> None:
        for run_ in (self.conformance, self.sealed, self.any_run):
            if run_ is not None:
                run_.close()


def _prepare(check: Check, snapshot: Snapshot, folder: Path, limits: Limits | None, confine: Confine | None,
             siblings: list[Path], env: ProjectEnv) -> _Prepared:
    """folder: this check's own, beside its siblings' (each check reads none of theirs when confined: in a view it sees
    only its own; by Landlock alone, the others are hidden)."""
    env_vars = {
        "PATH": env.search_path(os.environ.get("PATH", "/usr/bin:/bin")),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join(env.import_paths(snapshot.code)),
        "BANACH_CANON": str(snapshot.canon),
        "BANACH_CODE": str(snapshot.code),
        "BANACH_PYTHON": env.python,
    }
    others = [sibling for sibling in siblings if sibling != folder]
    held = [snapshot.held_back] if snapshot.held_back else []
    if check.identity == SEALED:  # the cases' inputs only: the expected values stay in this process
        files = {path: load_cases(text, path) for path, text in check.sealed}
        run_ = sealed.prepare(files, snapshot.code, folder, python=env.python, roots=env.roots,
                              node_modules=env.node_modules, go_modules=env.go_modules)
        wrap = (lambda argv: confine(argv, python=env.python, writable=[run_.scratch], read=run_.readable,
                                     hidden=[snapshot.canon, *held, *others], network=check.network, env=env_vars)) \
            if confine else None
        return _Prepared(tuple(run_.requests(env=env_vars, limits=limits, wrap=wrap)), sealed=run_)
    if check.identity not in ("tests", HELD_BACK):  # a command
        scratch = folder / "tmp"
        scratch.mkdir(parents=True)
        argv = confine(check.argv, python=env.python, writable=[scratch], read=(snapshot.canon,), hidden=[*held, *others],
                       network=check.network, env=env_vars) if confine else check.argv
        return _Prepared((Request(argv, cwd=snapshot.code, env={**env_vars, "HOME": str(scratch), "TMPDIR": str(scratch)},
                                  timeout=check.timeout, grace=0.5, limits=limits),))
    # a held-back run reads its own copy of held_back/ alone; a visible one, its copy of canon (never held_back/)
    source = (snapshot.held_back or snapshot.canon) if check.identity == HELD_BACK else snapshot.canon
    if polyglot.other_languages(check.argv):
        many = polyglot.prepare(source, snapshot.code, check.argv, folder, python=env.python, roots=env.roots,
                                show_sources=check.identity != HELD_BACK or check.reveal, node_modules=env.node_modules,
                                go_modules=env.go_modules)
        hide = [snapshot.canon, *held, *others]
        per_run = (lambda argv, writable, readable: confine(argv, python=env.python, writable=[writable], read=readable,
                                                            hidden=hide, network=check.network, env=env_vars)) \
            if confine else None
        return _Prepared(tuple(many.requests(env=env_vars, timeout=check.timeout, limits=limits, confine=per_run)),
                         any_run=many)
    measured = conformance.prepare(source, snapshot.code, check.argv, folder, python=env.python, roots=env.roots,
                                   show_sources=check.identity != HELD_BACK or check.reveal)
    originals = [snapshot.canon, *held]
    wrap = (lambda argv: confine(argv, python=env.python, writable=[measured.scratch], read=(measured.canon,),
                                 hidden=[*originals, *others], network=check.network, env=env_vars)) if confine else None
    return _Prepared((measured.request(env=env_vars, timeout=check.timeout, limits=limits, wrap=wrap),), measured)


def _result(check: Check, outcomes: list[Outcome], prepared: _Prepared) -> Result:
    if prepared.sealed is not None:
        return _sealed_result(check, outcomes, prepared.sealed)
    outcome = outcomes[0] if prepared.any_run is None else polyglot.merged(outcomes)
    output = (outcome.stdout + outcome.stderr).strip()
    passed = outcome.ok
    verdict = prepared.conformance.judge(outcome) if prepared.conformance is not None else \
        prepared.any_run.judge(outcomes) if prepared.any_run is not None else None
    if verdict is not None:
        output = verdict.output.strip()  # without the canaries: this reaches fix_plan, prompts and people
    excerpt = bounded(output)
    if verdict is not None:
        passed = verdict.passed and not outcome.timed_out
        if not verdict.passed:
            excerpt = verdict.summary() + "\n" + excerpt
            output = "\n".join(verdict.failing) + ("\nvoid" if verdict.void else "")
    if outcome.timed_out:
        excerpt = f"(killed after {check.timeout:g}s)\n" + excerpt
    if check.identity == HELD_BACK and not check.reveal:
        counts = (len(verdict.failing), len(verdict.results), bool(verdict.void)) if verdict is not None else (0, 0, True)
        return _held_back_result(check, passed, outcome, *counts)
    return Result(check, passed, None if outcome.timed_out else outcome.returncode, outcome.timed_out, excerpt,
                  fingerprint(output, outcome.timed_out), outcome.duration, False, bool(verdict and verdict.void))


def _held_back_result(check: Check, passed: bool, outcome: Outcome, failing: int, total: int, void: bool) -> Result:
    """What anyone but plan reads of a held-back run: one bit and a count. No file, test name, assert, output, exit
    code or canary, and not whether the run was void: a run voided by its canaries reads as every test failing (an
    oracle must not learn which of its answers tripped). The fingerprint changes only with the count."""
    if passed:
        excerpt = f"all {total} held-back tests pass"
    elif outcome.timed_out:
        excerpt = f"the held-back tests ran out of their {check.timeout:g}s"
    elif not total:
        excerpt = "the held-back tests did not run"
    else:
        excerpt = f"{failing} of {total} held-back tests do not pass"
    summary = f"{HELD_BACK}:{passed}:{failing}:{total}:{outcome.timed_out}"
    return Result(check, passed, None, outcome.timed_out, excerpt, hashlib.sha256(summary.encode()).hexdigest()[:16],
                  outcome.duration, False, void)


def _sealed_result(check: Check, outcomes: list[Outcome], run_: sealed.SealedRun) -> Result:
    """What anyone but plan reads of a sealed run: one bit and a count, never an input, an expected value or an answer
    (the person who wrote the cases reads them all in spec's dry run, with `reveal`). A void run reads as every case
    failing; the fingerprint changes only with the count."""
    verdict = run_.judge(outcomes)
    failing, total = len(verdict.failing), len(verdict.results)
    excerpt = f"all {total} sealed cases pass" if verdict.passed else f"{failing} of {total} sealed cases do not pass"
    if check.reveal:
        excerpt += "\n" + verdict.reveal()
    summary = f"{SEALED}:{verdict.passed}:{failing}:{total}"
    return Result(check, verdict.passed, None, any(o.timed_out for o in outcomes), excerpt,
                  hashlib.sha256(summary.encode()).hexdigest()[:16], sum(o.duration for o in outcomes), False,
                  bool(verdict.void))


def tamper_results(canon: Canon, code: GitRepo, commit: str, changed: list[str] | None,
                   start: Mapping[str, bytes] | None = None) -> list[Result]:
    """The tamper scan (shared/measurement/tamper.py) of the Python files in `changed` at commit (None: every file), one failing
    Result per requirement whose files have hits it does not allow. `start`: those files as they were at the
    workspace's start, whose hits are the project's own and not held against it (shared/measurement/tamper_diff.py).
    A file no requirement owns is no agent's (the fence keeps every turn inside its item's scope): a person's code,
    left to the person."""
    blobs = code.blob_ids(commit)
    hits = tamper_diff.scan_change(
        code, {path: blobs[path] for path in (blobs if changed is None else set(changed) & set(blobs))}, start)
    results = []
    for req in sorted(canon.requirements.values(), key=lambda r: r.id):
        mine = [str(hit) for hit in tamper.unallowed(hits, canon, (req.id,)) if req.paths and matches(hit.path, req.paths)]
        if mine:
            check = Check(req.id, "tamper", (), "tamper scan", 0.0, "")
            excerpt = "the tamper scan found what code under test has no business doing (allow a kind with `allows:` " \
                      "in canon if it is meant):\n" + "\n".join(mine[:EXCERPT_LINES])
            results.append(Result(check, False, None, False, excerpt, fingerprint("\n".join(mine), False), 0.0, False))
    return results


def check_limits(config: Config) -> Limits:
    """One check's share of the machine: the same caps as an agent turn (build's keys say how much)."""
    build = config.build
    return Limits(max_processes=build.max_processes, memory_bytes=build.max_memory_bytes, file_bytes=build.max_file_bytes,
                  output_bytes=build.max_output_bytes)


def run_checks(
    checks: list[Check],
    snapshot: Snapshot,
    *,
    jobs: int,
    memo: Memo | None,
    confine: Confine | None,
    limits: Limits | None = None,
    remote: Callable[[list[Check]], list[Result]] | None = None,
    env: ProjectEnv | None = None,
) -> list[Result]:
    """confine: how each check is confined (shared/isolation/kinds.py: in a view of its own, with its own cgroup, memory,
    process and time limits), or None to run them as they are (isolation 'none').
    remote: runs the checks the memo did not answer somewhere else (a Ray node, shared/checks/remote.py).
    Every check has a folder of its own under the snapshot's scratch (its HOME and TMPDIR; for conformance tests
    also its copy of canon with the canaries): no check can write, or find by a path, another's record."""
    results: dict[int, Result] = {}
    todo: list[tuple[int, Check]] = []
    for index, check in enumerate(checks):
        cached = memo.get(check.memo_key) if memo else None
        if cached is not None:
            results[index] = Result(check, cached["passed"], cached["exit_code"], cached["timed_out"],
                                    cached["excerpt"], cached["fingerprint"], 0.0, True, bool(cached.get("void")))
        else:
            todo.append((index, check))
    workers = max(1, jobs or os.cpu_count() or 1)
    if todo and remote is not None:
        for (index, _), result in zip(todo, remote([check for _, check in todo]), strict=True):
            results[index] = result
        todo_here: list[tuple[int, Check]] = []
    else:
        todo_here = todo
    folders = [snapshot.scratch / "checks" / f"{number}-{check.memo_key[:12]}" for number, (_, check) in enumerate(todo_here)]
    prepared: list[_Prepared] = []
    try:
        for (_, check), folder in zip(todo_here, folders, strict=True):
            prepared.append(_prepare(check, snapshot, folder, limits, confine, folders, env or OWN))
        if todo_here:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = {index: pool.submit(lambda c, p: _result(c, [run(r) for r in p.requests], p), check, ready)
                           for (index, check), ready in zip(todo_here, prepared, strict=True)}
                for index, future in futures.items():
                    results[index] = future.result()
    finally:
        for ready in prepared:
            ready.close()
    if memo is not None:
        for index, _check in todo:
            result = results[index]
            if not result.timed_out:  # a time-out may be the machine's fault; measure it again next time
                memo.put(result.check.memo_key, {"passed": result.passed, "exit_code": result.exit_code,
                                                 "timed_out": False, "excerpt": result.excerpt,
                                                 "fingerprint": result.fingerprint, "void": result.void})
    return [results[index] for index in range(len(checks))]
