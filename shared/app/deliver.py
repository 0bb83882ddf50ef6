"""`banach deliver`: the governed commits onto a branch of your repository, and what certified them.

The result is build's branch in the workspace's code repository (state/build/code.git): the commit your
repository was cloned at, then build's kept commits (each carrying Banach-Item, Canon-Version and
Banach-Iteration trailers). Deliver fetches that history into your repository and points a branch at it
(default banach/result); with --with-tests it adds one commit on top that carries canon's conformance tests
which the governed commits' requirements name under `tests:`, at the paths canon keeps them (tests/...).

Every git command runs through shared.git's hardened configuration, in your repository as much as in the
workspace's: no hooks, no config or attributes from either tree beyond what that configuration allows. The
objects cross with a local `git fetch` (the other side is `git upload-pack`, safe in a repository one does not
trust); the branch moves with `update-ref` against the value it was read at, and only forward, unless --force.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from canon.model import Canon
from canon.store import CanonStore, held_back_path
from shared.app.status import labelled, strength_texts
from shared.contracts import trailers
from shared.errors import GitError, WorkspaceError
from shared.git import Entry, GitRepo, hardened_command
from shared.monitor.series import read_history
from shared.workspace import Workspace

TESTS_TRAILER = "Banach-Conformance-Tests"  # on the commit --with-tests adds: the test files it carries
ZERO = "0" * 40


@dataclass(frozen=True)
class GovernedCommit:
    commit: str
    subject: str
    item: str
    canon_version: str
    iteration: str
    requirements: tuple[str, ...]


@dataclass(frozen=True)
class Certificate:
    pass_number: int | None
    canon_version: int
    code_commit: str
    measured: str = ""  # "M of N requirements measured", "" for a certificate from before it was recorded


@dataclass(frozen=True)
class Delivery:
    target: Path
    branch: str
    head: str  # where the branch points now
    previous: str  # where it pointed before ("" for a new branch)
    code_head: str  # build's result: the last commit in the workspace's code
    base: str  # the commit of your repository the workspace was cloned at ("" when unknown)
    governed: tuple[GovernedCommit, ...]
    other: tuple[tuple[str, str], ...]  # (commit, subject) on top of the source that build did not make
    tests_commit: str
    tests: tuple[str, ...]
    tests_note: str  # why --with-tests added no commit, or ""
    certificate: Certificate | None
    canon_version: int  # canon's version now
    held_back: tuple[str, ...] = ()  # requirements of the governed commits with held-back tests not delivered
    strength: tuple[str, ...] = ()  # what each requirement's pass rests on (shared/app/status.py strength_texts)

    def summary(self) -> str:
        moved = ("unchanged: it already pointed there" if self.previous == self.head else
                 f"was {self.previous[:12]}" if self.previous else "a new branch")
        on = f", on top of {self.base[:12]} (where the workspace was cloned from)" if self.base else ""
        lines = [f"delivered {len(self.governed)} governed commit(s) to branch {self.branch} of {self.target} "
                 f"(now {self.head[:12]}; {moved}){on}"]
        if not self.governed:
            lines.append("  (build has kept no commit yet)")
        for c in self.governed:
            lines.append(f"  {c.commit[:12]}  {c.item}  requirements {', '.join(c.requirements) or '?'}  "
                         f"canon v{c.canon_version}  iteration {c.iteration}  {c.subject}")
        for commit, subject in self.other:
            lines.append(f"  {commit[:12]}  (not made by build: no {trailers.ITEM} trailer)  {subject}")
        if self.tests_commit:
            lines.append(f"  {self.tests_commit[:12]}  canon's conformance tests (canon v{self.canon_version}): "
                         f"{', '.join(self.tests)}")
        elif self.tests_note:
            lines.append(f"  (no tests commit: {self.tests_note})")
        if self.held_back:
            lines.append(f"  (held-back tests of {', '.join(self.held_back)}: plan measured the code with them; they are "
                         "not delivered, so that later agents still cannot read them. --with-tests --with-held-back "
                         "adds them)")
        lines.append(self._certified())
        lines += labelled("  resting on ", list(self.strength), 13)
        lines.append(f"see it: git -C {self.target} log --format='%h %s' {self.branch}")
        return "\n".join(lines)

    @property
    def certified(self) -> bool:
        """Plan certified exactly the delivered code at canon's present version."""
        cert = self.certificate
        return cert is not None and cert.code_commit == self.code_head and cert.canon_version == self.canon_version

    def _certified(self) -> str:
        cert = self.certificate
        if cert is None:
            return (f"NOT CERTIFIED: plan has never certified this workspace; the code's head {self.code_head[:12]} is "
                    "unmeasured as a whole (banach run --until-certified, or plan-loop once, measures it)")
        where = f"plan pass {cert.pass_number}" if cert.pass_number else "a plan pass"
        if cert.code_commit == self.code_head and cert.canon_version == self.canon_version:
            return (f"certified: {where} found nothing open at canon v{cert.canon_version} x code "
                    f"{cert.code_commit[:12]}" + (f" ({cert.measured})" if cert.measured else "")
                    + ", which is the delivered code")
        why = (f"the code's head {self.code_head[:12]} is not the commit plan certified" if cert.code_commit != self.code_head
               else f"canon is at v{self.canon_version} now")
        return (f"NOT CERTIFIED: {why}; the latest certificate is {where} at canon v{cert.canon_version} x code "
                f"{cert.code_commit[:12]}. Run plan-loop once (or banach run --until-certified) to measure this head")


def deliver(ws: Workspace, *, target: Path | None, branch: str, with_tests: bool, force: bool,
            with_held_back: bool = False) -> Delivery:
    """with_held_back: the tests commit carries the requirements' held-back tests too (at their tests/ names); once
    they are in the code any later agent reads them, and they are held back no more."""
    if with_held_back and not with_tests:
        raise WorkspaceError("--with-held-back adds the held-back tests to the tests commit of --with-tests; give both")
    code = ws.code_repo()
    head = code.head()
    if head is None:
        raise WorkspaceError(f"{ws.code} has no commits; there is nothing to deliver")
    repo = open_target(target if target is not None else recorded_source(ws, code), code)
    _check_branch_name(repo, branch)
    ref = f"refs/heads/{branch}"
    previous = repo.resolve(ref)
    _check_not_checked_out(repo, ref, branch)
    _fetch(repo, code, head)
    base = code.origin_base(head)
    governed, other = governed_commits(ws, code, base, head)
    canon_store = CanonStore(ws.canon)
    canon = canon_store.load()
    final, note = head, ""
    tests: tuple[str, ...] = ()
    if with_tests:
        final, tests, note = _tests_commit(repo, head, canon_store, canon, code, governed, previous, with_held_back)
    if previous and previous != final and not force and not _may_replace(repo, previous, final, with_tests):
        earlier = (" (the tests commit of an earlier delivery: deliver --with-tests again to keep them on top)"
                   if _is_tests_commit(repo, previous) else "")
        raise WorkspaceError(
            f"branch {branch} of {repo.path} is at {previous[:12]}{earlier}, which is not an ancestor of the result "
            f"{final[:12]}: moving it would drop commits. Pick another branch (--branch NAME), or overwrite it with --force")
    if previous != final:
        result = repo.command("update-ref", "-m", "banach deliver", ref, final, previous or ZERO)
        if result.returncode != 0:
            raise GitError(f"cannot move {branch} in {repo.path}: {result.stderr.decode(errors='replace').strip()}")
    held = () if with_held_back else tuple(sorted({rid for commit in governed for rid in commit.requirements
                                                   if rid in canon.requirements and canon.requirements[rid].held_back}))
    return Delivery(repo.path, branch, final, previous, head, base, governed, other, final if final != head else "", tests,
                    note, _certificate(ws), canon.version, held, tuple(strength_texts(canon.by_strength())))


def recorded_source(ws: Workspace, code: GitRepo) -> Path:
    """The repository `banach init --code` cloned (build's git directory keeps it as origin)."""
    url = code.command("config", "--get", "remote.origin.url").stdout.decode(errors="replace").strip()
    if not url:
        raise WorkspaceError(f"the workspace {ws.root} was not made from a repository (banach init without --code), so "
                             "there is no repository to deliver to: give one with --to REPO")
    local = Path(url.removeprefix("file://"))
    if "://" in url.removeprefix("file://") or not local.is_absolute():
        raise WorkspaceError(f"the workspace was made from {url}; deliver writes into a repository on this machine: "
                             "clone it and give the clone with --to PATH")
    return local


def open_target(path: Path, code: GitRepo) -> GitRepo:
    path = path.expanduser().resolve()
    dot_git = path / ".git"
    if dot_git.is_dir():
        repo = GitRepo(path, git_dir=dot_git)
    elif dot_git.is_file():  # a linked work tree or a submodule: "gitdir: PATH"
        pointer = dot_git.read_text(errors="replace").strip().removeprefix("gitdir:").strip()
        repo = GitRepo(path, git_dir=(path / pointer).resolve())
    elif (path / "HEAD").is_file() and (path / "objects").is_dir():
        repo = GitRepo(path, git_dir=path)
    else:
        raise WorkspaceError(f"{path} is not a git repository; give the repository to deliver into with --to REPO")
    if repo.git_dir.resolve() == code.git_dir.resolve():
        raise WorkspaceError(f"{path} is the workspace's own code repository; deliver into your repository (--to REPO)")
    return repo


def _check_branch_name(repo: GitRepo, branch: str) -> None:
    if repo.command("check-ref-format", "--branch", branch).returncode != 0 or branch.startswith("-"):
        raise WorkspaceError(f"'{branch}' is not a valid branch name; pick another with --branch")


def _check_not_checked_out(repo: GitRepo, ref: str, branch: str) -> None:
    if repo.path == repo.git_dir:
        return  # bare: no work tree to fall out of step
    current = repo.command("symbolic-ref", "-q", "HEAD").stdout.decode(errors="replace").strip()
    if current == ref:
        raise WorkspaceError(f"{branch} is checked out in {repo.path}; moving it would leave that work tree out of step "
                             f"with it. Switch to another branch there (git -C {repo.path} switch -), or deliver to "
                             "another --branch")


def _fetch(repo: GitRepo, code: GitRepo, head: str) -> None:
    result = hardened_command(
        ["-c", "protocol.version=2", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules",
         "--no-auto-gc", str(code.git_dir.resolve()), head], git_dir=repo.git_dir)
    if result.returncode != 0:
        raise GitError(f"cannot fetch {head[:12]} from {code.git_dir} into {repo.path}:\n"
                       f"{result.stderr.decode(errors='replace').strip()}")


def governed_commits(ws: Workspace, code: GitRepo, base: str, head: str) -> tuple[tuple[GovernedCommit, ...],
                                                                                   tuple[tuple[str, str], ...]]:
    """Build's commits since base (each with what it claims), and the others there."""
    span = f"{base}..{head}" if base else head
    fields = ["%H", "%s", *(f"%(trailers:key={key},valueonly,separator=%x2C)"
                            for key in (trailers.ITEM, trailers.CANON_VERSION, trailers.ITERATION))]
    requirements = _requirements_by_item(ws)
    governed: list[GovernedCommit] = []
    other: list[tuple[str, str]] = []
    for record in code.log("%x00".join(fields) + "%x01", "--reverse", span).split("\x01"):
        parts = [part.strip() for part in record.strip("\n").split("\x00")]
        if len(parts) < 5:
            continue
        commit, subject, item, version, iteration = parts[:5]
        if not item:
            other.append((commit, subject))
            continue
        reqs = tuple(requirements.get(item, ())) or (item.split(".", 1)[0],)
        governed.append(GovernedCommit(commit, subject, item, version, iteration, reqs))
    return tuple(governed), tuple(other)


def _requirements_by_item(ws: Workspace) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for plan_pass in read_history(ws).passes:
        found.update(plan_pass.requirements_by_item)
    return found


def _certificate(ws: Workspace) -> Certificate | None:
    history = read_history(ws)
    if not history.certificates:
        return None
    latest = history.certificates[-1]
    numbers = {plan_pass.started_seq: number for number, plan_pass in enumerate(history.passes, 1)}
    measured = (f"{latest['measured']} of {latest['requirements']} requirements measured"
                if "measured" in latest and "requirements" in latest else "")
    return Certificate(numbers.get(int(str(latest.get("pass_seq", -1)))), int(str(latest["canon_version"])),
                       str(latest["code_commit"]), measured)


def conformance_files(canon: Canon, requirements: set[str], files: dict[str, str], *,
                      held_back: bool = False) -> dict[str, str]:
    """The test files the requirements name under `tests:` (and `held_back:` when asked), with the conftest.py files
    beside or above them: their path in the code -> their path in canon (a held-back test's is under held_back/)."""
    chosen = [canon.requirements[rid] for rid in requirements if rid in canon.requirements]
    named = {node.split("::", 1)[0]: node.split("::", 1)[0] for req in chosen for node in req.tests}
    if held_back:
        named.update({node.split("::", 1)[0]: held_back_path(node.split("::", 1)[0]) for req in chosen
                      for node in req.held_back})
    helpers = {f"{parent}/conftest.py" for path in named for parent in PurePosixPath(path).parents if str(parent) != "."}
    return dict(sorted({**named, **{path: path for path in helpers if path in files}}.items()))


def _tests_commit(repo: GitRepo, head: str, canon_store: CanonStore, canon: Canon, code: GitRepo,
                  governed: tuple[GovernedCommit, ...], previous: str,
                  held_back: bool = False) -> tuple[str, tuple[str, ...], str]:
    """(the commit on top of head that adds the tests, the files, "") or (head, (), why there is none)."""
    requirements = {rid for commit in governed for rid in commit.requirements}
    if not governed:
        return head, (), "there are no governed commits"
    files = canon_store.files()
    paths = conformance_files(canon, requirements, files, held_back=held_back)
    if not paths:
        return head, (), f"the requirements of the governed commits ({', '.join(sorted(requirements))}) name no tests"
    in_code = code.blob_ids(head)
    entries: dict[str, Entry | None] = {}
    for path, stored in paths.items():
        if in_code.get(path) == files[stored]:
            continue  # the code already holds exactly this test
        if path in in_code:
            raise WorkspaceError(f"{path} is in the code with other content than canon's conformance test of that name; "
                                 "--with-tests would replace the project's file. Deliver without --with-tests, or give "
                                 "the test in canon another name (spec-loop add)")
        content = canon_store.git.command("cat-file", "blob", files[stored]).stdout
        blob = repo.command("hash-object", "-w", "--no-filters", "--stdin", input=content).stdout.decode().strip()
        entries[path] = Entry("100644", blob)
    if not entries:
        return head, (), "the code already holds every conformance test the governed commits' requirements name"
    items = ", ".join(commit.item for commit in governed)
    fields = "tests: and held_back:" if held_back else "tests:"
    message = (f"canon's conformance tests for {items} (canon v{canon.version})\n\n"
               f"The tests that canon's requirements {', '.join(sorted(requirements))} name under {fields}, as spec-loop "
               "took them into canon; plan measured the commits below with them.")
    commit, tree = repo.commit_entries(head, entries, message, {trailers.CANON_VERSION: str(canon.version),
                                                                 TESTS_TRAILER: ", ".join(sorted(entries))}, role="spec")
    if previous and repo.commit_parts(previous) == (tree, (head,)):
        return previous, tuple(sorted(entries)), ""  # delivered before: the same tests on the same head
    return commit, tuple(sorted(entries)), ""


def _may_replace(repo: GitRepo, previous: str, final: str, with_tests: bool) -> bool:
    """Forward only: the branch's commit is in the result's history, or (delivering tests again) it is the tests
    commit an earlier delivery added on top of a commit that is."""
    if repo.is_ancestor(previous, final):
        return True
    if not with_tests or not _is_tests_commit(repo, previous):
        return False
    _, parents = repo.commit_parts(previous)
    return len(parents) == 1 and repo.is_ancestor(parents[0], final)


def _is_tests_commit(repo: GitRepo, commit: str) -> bool:
    try:
        return bool(repo.trailer(commit, TESTS_TRAILER))
    except GitError:
        return False
