"""`banach refresh`: bring new commits of the repository the workspace was cloned from into the governed code.

Between turns only (it takes build's iteration lock, and refuses while a turn runs or an iteration a crash left open
waits for recovery). The upstream branch is fetched into build's git directory; the code then moves forward to it
when build has kept nothing since, or gets a merge commit when the two histories merge without conflict (computed
from the objects with `git merge-tree`, never in the work tree); a conflict changes nothing and names the files.
Build's journal records the refresh; plan's next pass measures the new code like any other commit.
"""
from __future__ import annotations

from dataclasses import dataclass

from shared.atomic import file_lock
from shared.errors import LockBusy, WorkspaceError
from shared.git import GitError, GitRepo
from shared.journal import Journal
from shared.workspace import Workspace


@dataclass(frozen=True)
class Refreshed:
    how: str  # "unchanged" | "fast-forward" | "merge"
    upstream: str
    previous: str
    head: str

    def summary(self, ws: Workspace) -> str:
        if self.how == "unchanged":
            return f"the code already holds upstream {self.upstream[:12]}; nothing to bring in"
        moved = "moved forward to" if self.how == "fast-forward" else "merged with"
        return (f"the code {moved} upstream {self.upstream[:12]}: {self.previous[:12]} -> {self.head[:12]}. "
                f"Plan's next pass measures it (it runs by itself under banach up, or: plan-loop once -w {ws.root})")


def _upstream_ref(code: GitRepo) -> tuple[str, str]:
    """(the branch of origin the clone followed, the remote-tracking ref it is fetched into)."""
    tracked = code.command("symbolic-ref", "-q", "refs/remotes/origin/HEAD").stdout.decode().strip()
    if not tracked:
        raise WorkspaceError("this workspace's code has no origin to refresh from (it was not made with "
                             "banach init --code); give one with --from REPO")
    return tracked.removeprefix("refs/remotes/origin/"), tracked


def _fetch(code: GitRepo, source: str, branch: str, ref: str) -> str:
    result = code.command("-c", "protocol.version=2", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                          "--no-recurse-submodules", "--no-auto-gc", source, f"+refs/heads/{branch}:{ref}")
    if result.returncode != 0:
        raise GitError(f"cannot fetch branch {branch} of {source}:\n{result.stderr.decode(errors='replace').strip()}")
    return code.resolve(ref)


def _open_iteration(ws: Workspace) -> bool:
    journal = Journal.reader(ws.journal_path("build"))
    if journal is None:
        return False
    with journal:
        started, ended = journal.last("iteration.started"), journal.last("iteration.ended")
    return started is not None and (ended is None or ended.seq < started.seq)


def refresh(ws: Workspace, *, source: str = "", branch: str = "") -> Refreshed:
    code = ws.code_repo()
    if source:
        ref = "refs/banach/upstream"
        branch = branch or "main"
    else:
        followed, ref = _upstream_ref(code)
        branch = branch or followed
        source = code.command("remote", "get-url", "origin").stdout.decode().strip()
    try:
        with file_lock(ws.role_dir("build") / "iterate.lock", wait=False, what="banach refresh"):
            if _open_iteration(ws):
                raise WorkspaceError("build-loop left an iteration open (it was stopped mid-turn); run build-loop once "
                                     f"-w {ws.root} (or start it) so that it recovers first, then refresh")
            return _bring_in(ws, code, _fetch(code, source, branch, ref))
    except LockBusy:
        raise WorkspaceError("build-loop is in a turn, or running with parallel workers; refresh between turns "
                             f"(banach ctl -w {ws.root} stop build, refresh, then banach ctl start build)") from None


def _bring_in(ws: Workspace, code: GitRepo, upstream: str) -> Refreshed:
    head = code.head() or ""
    if head and code.is_ancestor(upstream, head):
        return Refreshed("unchanged", upstream, head, head)
    if not head or code.is_ancestor(head, upstream):
        how, new = "fast-forward", upstream
    else:
        merged = code.command("merge-tree", "--write-tree", "--name-only", "--no-messages", head, upstream)
        lines = merged.stdout.decode(errors="replace").splitlines()
        if merged.returncode != 0:
            conflicts = ", ".join(sorted(set(lines[1:]))) or merged.stderr.decode(errors="replace").strip()
            raise WorkspaceError(f"upstream {upstream[:12]} and the governed code conflict in {conflicts}; nothing was "
                                 "changed. Merge upstream into your repository's copy of the governed branch (banach "
                                 "deliver) by hand, or make a new workspace from it")
        message = (f"refresh: merge upstream {upstream[:12]} into the governed code\n\n"
                   f"Banach-Refresh: {upstream}\n").encode()
        new = code.command("commit-tree", lines[0], "-p", head, "-p", upstream, "-F", "-", input=message,
                           role="build").stdout.decode().strip()
        how = "merge"
    code.publish(new, head or "0" * 40)
    with Journal.for_role(ws, "build") as journal:
        journal.append("code.refreshed", {"how": how, "upstream": upstream, "previous": head, "head": new})
    return Refreshed(how, upstream, head, new)
