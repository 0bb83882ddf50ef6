"""Plan measures its own copy: a commit is exported from the object database alone, bounded, read-only,
fresh for every pass, and an export that fails is a failing measurement, never a crash or a certificate."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from plan_loop.passes import PassReport, PlanService
from shared.checks.snapshot import KEEP, PREFIX
from shared.contracts import fix_plan as fix_plan_file
from shared.errors import ExportError
from shared.export import export_commit, remove_tree
from shared.git import GitRepo
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import git

# A program that writes into a tree the way a check or the code under test would: first without asking,
# then after making the tree writable again (which its owner may).
PLANTER = r"""
import json, os, sys
root = sys.argv[1]
landed = []
def attempt(name, action):
    try:
        action()
        landed.append(name)
    except OSError:
        pass
def write(path, mode="w"):
    with open(path, mode) as handle:
        handle.write("planted\n")
attempt("overwrite", lambda: write(os.path.join(root, "README.md"), "a"))
attempt("create", lambda: write(os.path.join(root, "conftest.py")))
attempt("create-deep", lambda: write(os.path.join(root, "sub", "conftest.py")))
attempt("rename", lambda: os.rename(os.path.join(root, "README.md"), os.path.join(root, "GONE.md")))
if "--chmod" in sys.argv:
    os.chmod(root, 0o755)
    attempt("create-after-chmod", lambda: write(os.path.join(root, "planted.py")))
print(json.dumps(landed))
"""


def _repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "--initial-branch=main")
    return path


def _commit(path: Path) -> str:
    git(path, "add", "-A")
    git(path, "commit", "-qm", "c")
    return git(path, "rev-parse", "HEAD")


def _hostile(tmp_path: Path) -> tuple[GitRepo, str, Path]:
    """A commit carrying everything an export must not honour, and a marker a filter driver would make."""
    repo = _repo(tmp_path / "repo")
    marker = tmp_path / "smudged"
    (repo / "README.md").write_text("# hostile\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "file.txt").write_text("inside\n")
    (repo / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "ignored.txt").write_text("export-ignore would drop me\n")
    (repo / "subst.txt").write_text("$Format:%H$\n")
    (repo / ".gitattributes").write_text("ignored.txt export-ignore\nsubst.txt export-subst\n*.txt filter=evil\n")
    os.symlink("/etc/passwd", repo / "passwd")
    os.symlink("../../outside", repo / "sub" / "out")
    os.symlink("sub/file.txt", repo / "inside")
    os.symlink("..", repo / "sub" / "up")  # stays inside: it is the tree's root
    os.symlink("sub/up/..", repo / "chain")  # its text stays inside, but through sub/up it leaves
    git(repo, "add", "-A")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},vendor/lib")
    git(repo, "commit", "-qm", "hostile")
    git(repo, "config", "filter.evil.smudge", f"touch {marker}; cat")
    git(repo, "config", "filter.evil.required", "true")
    return GitRepo(repo), git(repo, "rev-parse", "HEAD"), marker


def _writable(root: Path) -> list[str]:
    found = []
    for folder, folders, files in os.walk(root):
        for name in [*folders, *files, ""]:
            path = os.path.join(folder, name) if name else folder
            if not os.path.islink(path) and os.lstat(path).st_mode & 0o222:
                found.append(path)
    return found


def _as_owner(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run argv as the owner of our files without root's power to ignore file modes (what a user has)."""
    if os.geteuid() == 0:
        argv = ["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)


def _plant(tree: Path, *extra: str) -> list[str]:
    import json

    return json.loads(_as_owner([sys.executable, "-I", "-c", PLANTER, str(tree), *extra]).stdout)


def test_export_refuses_links_out_skips_gitlinks_and_honours_no_attribute(tmp_path: Path) -> None:
    repo, commit, marker = _hostile(tmp_path)
    out = tmp_path / "out"
    report = export_commit(repo, commit, out)
    refused = {link.path: link for link in report.refused_links}
    assert set(refused) == {"passwd", "sub/out", "chain"}
    assert refused["passwd"].target == "/etc/passwd" and refused["sub/out"].target == "../../outside"
    for path in ("passwd", "sub/out", "chain"):
        assert not (out / path).exists() and not (out / path).is_symlink()
    assert os.readlink(out / "inside") == "sub/file.txt" and (out / "inside").read_text() == "inside\n"
    assert os.readlink(out / "sub" / "up") == ".."
    assert report.skipped_gitlinks == ("vendor/lib",) and not (out / "vendor").exists()
    assert (out / "ignored.txt").read_text() == "export-ignore would drop me\n"  # export-ignore not honoured
    assert (out / "subst.txt").read_text() == "$Format:%H$\n"  # export-subst not honoured
    assert not marker.exists()  # the repository's filter driver never ran
    assert os.stat(out / "run.sh").st_mode & 0o111 and not os.stat(out / "README.md").st_mode & 0o111
    assert report.files == 6 and report.links == 2 and report.refused_paths == ()


def test_paths_with_dot_dot_or_a_git_folder_are_refused(tmp_path: Path) -> None:
    repo_path = _repo(tmp_path / "repo")
    repo = GitRepo(repo_path)

    def blob(text: str) -> str:
        return repo._git("hash-object", "-w", "--stdin", input=text.encode())

    def tree(lines: list[str]) -> str:
        return repo._git("mktree", input="".join(line + "\n" for line in lines).encode())

    hook, config, ok, up = (blob(text) for text in ("#!/bin/sh\ntouch /tmp/pwned\n", "[core]\n", "ok\n", "up\n"))
    hooks = tree([f"100755 blob {hook}\tpost-checkout"])
    dot_git = tree([f"040000 tree {hooks}\thooks", f"100644 blob {config}\tconfig"])
    sneaky = tree([f"100644 blob {up}\t.."])
    root = tree([f"100644 blob {ok}\tok.txt", f"040000 tree {dot_git}\t.git", f"040000 tree {dot_git}\t.GIT",
                 f"040000 tree {sneaky}\tsub"])
    commit = repo._git("commit-tree", root, "-m", "hostile paths")
    out = tmp_path / "out"
    report = export_commit(repo, commit, out)
    assert set(report.refused_paths) == {".git/hooks/post-checkout", ".git/config", ".GIT/hooks/post-checkout",
                                         ".GIT/config", "sub/.."}
    assert sorted(p.name for p in out.iterdir()) == ["ok.txt"] and report.files == 1


def test_limits_stop_the_export_and_leave_nothing_behind(tmp_path: Path) -> None:
    repo_path = _repo(tmp_path / "repo")
    for index in range(3):
        (repo_path / f"f{index}.txt").write_text("0123456789\n")
    commit = _commit(repo_path)
    repo = GitRepo(repo_path)
    with pytest.raises(ExportError, match="more than 2 files.*plan.export_max_files"):
        export_commit(repo, commit, tmp_path / "few", max_files=2)
    with pytest.raises(ExportError, match="more than 30 bytes.*plan.export_max_bytes"):
        export_commit(repo, commit, tmp_path / "small", max_bytes=30)
    assert not (tmp_path / "few").exists() and not (tmp_path / "small").exists()
    assert export_commit(repo, commit, tmp_path / "fits", max_files=3, max_bytes=33).bytes == 33


def test_missing_objects_and_unknown_commits_are_export_errors(tmp_path: Path) -> None:
    repo_path = _repo(tmp_path / "repo")
    (repo_path / "a.txt").write_text("soon gone\n")
    commit = _commit(repo_path)
    repo = GitRepo(repo_path)
    blob = repo.tree_entries(commit)["a.txt"].blob
    (repo_path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    with pytest.raises(ExportError, match=f"missing object {blob}"):
        export_commit(repo, commit, tmp_path / "out")
    with pytest.raises(ExportError, match="cannot read commit"):
        export_commit(repo, "f" * 40, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_export_is_read_only_to_its_owner(tmp_path: Path) -> None:
    repo_path = _repo(tmp_path / "repo")
    (repo_path / "README.md").write_text("# code\n")
    (repo_path / "sub").mkdir()
    (repo_path / "sub" / "mod.py").write_text("X = 1\n")
    commit = _commit(repo_path)
    out = tmp_path / "out"
    export_commit(GitRepo(repo_path), commit, out)
    assert _writable(out) == []
    assert _plant(out) == []  # nothing written, created or renamed by a program that just tries
    assert (out / "README.md").read_text() == "# code\n" and not (out / "conftest.py").exists()
    assert _plant(out, "--chmod") == ["create-after-chmod"]  # its owner can undo the bits: hence a fresh tree per pass
    remove_tree(out)
    assert not out.exists()


def _add_requirement(ws: Workspace, name: str, text: str) -> Workspace:
    from spec_loop.draft import Draft
    from spec_loop.service import SpecService

    spec = SpecService(ws)
    with spec.locked():
        decision = spec.decide(Draft(f"{name}.md", f"requirements/{name}.md", text.encode()), source="test")
    spec.close()
    assert decision.accepted, decision.problems
    return Workspace.open(ws.root)


def _pass(ws: Workspace, *, fresh: bool = True) -> PassReport:
    service = PlanService(ws)
    try:
        return service.run_pass(fresh=fresh)
    finally:
        service.close()


def _pass_folders(ws: Workspace) -> list[Path]:
    return sorted(p for p in (ws.role_dir("plan") / "scratch").iterdir() if p.name.startswith(PREFIX))


# The check plants into the tree it measures (as its owner may), and fails if a plant is already there.
PLANTING_CHECK = ("## PL-1: nothing planted\npaths: textkit/**\nchecks:\n"
                  "  - test ! -e planted.py && chmod u+w . && echo x > planted.py && test -d $TMPDIR\n\n"
                  "A pass sees only the commit.\n")


def test_every_pass_measures_a_fresh_tree_not_one_a_check_planted_into(measured: Workspace) -> None:
    ws = _add_requirement(measured, "plant", PLANTING_CHECK)
    first = _pass(ws)
    [tree_one] = [p / "code" for p in _pass_folders(ws)][-1:]
    assert (tree_one / "planted.py").exists()  # the plant landed in the first pass's (kept) tree
    assert not any(i.startswith("PL-1.") for i in first.items)
    second = _pass(ws)
    assert not any(i.startswith("PL-1.") for i in second.items)  # a reused tree would have failed PL-1
    folders = _pass_folders(ws)
    assert len(folders) == 2 and folders[0] == tree_one.parent  # the second pass had a folder of its own
    assert not (folders[-1] / "tmp").exists()  # the scratch goes with the pass
    for _ in range(KEEP):
        _pass(ws)
    assert len(_pass_folders(ws)) == KEEP and tree_one.parent not in _pass_folders(ws)  # read-only trees pruned


def _commit_without_its_blob(ws: Workspace) -> str:
    (ws.code / "textkit" / "extra.py").write_text("EXTRA = 'only build has this, and then not even build'\n")
    git(ws.code, "add", "-A")
    git(ws.code, "commit", "-qm", "extra")
    repo = ws.code_repo()
    commit = repo.head()
    assert commit is not None
    blob = repo.tree_entries(commit)["textkit/extra.py"].blob
    (repo.git_dir / "objects" / blob[:2] / blob[2:]).unlink()
    return commit


def _assert_failing_measurement(ws: Workspace, report: PassReport, needle: str) -> None:
    measured_ids = {"TK-1", "TK-2", "TK-3", "TK-4", "TK-5"}
    assert needle in report.export_error and not report.certified
    plan = fix_plan_file.read(ws.fix_plan_json)
    assert plan is not None and {i.requirements[0] for i in plan.items} == measured_ids
    for item in plan.items:
        assert item.evidence[0].check.startswith("export ") and needle in item.evidence[0].excerpt
    with Journal(ws.journal_path("plan"), readonly=True) as journal:
        row = journal.last("pass")
        assert row is not None and needle in row.data["export"]["error"]
        certificate = journal.last("certificate")
        assert certificate is None or certificate.data["code_commit"] != report.code_commit


def test_a_commit_with_missing_objects_is_a_failing_measurement(measured: Workspace) -> None:
    commit = _commit_without_its_blob(measured)
    reports = PlanService(measured)
    try:
        passes = reports.measure()
        fresh = reports.run_pass(fresh=True)
    finally:
        reports.close()
    assert passes[0].code_commit == commit and fresh.residual == 5
    _assert_failing_measurement(measured, fresh, "cannot copy commit")
    assert not any(commit[:12] in p.name for p in _pass_folders(measured))  # no half-made folder stays behind


def test_a_commit_over_the_file_limit_is_a_failing_measurement(measured: Workspace) -> None:
    ws = _limit_files(measured, 3)
    assert ws.config.plan.export_max_files == 3
    _assert_failing_measurement(ws, _pass(ws), "more than 3 files")


def _limit_files(ws: Workspace, limit: int) -> Workspace:
    text = ws.config_file.read_text()
    setting = f"export_max_files = {limit}"
    text = text.replace("[plan]", f"[plan]\n{setting}", 1) if "[plan]" in text else text + f"\n[plan]\n{setting}\n"
    ws.config_file.write_text(text)
    return Workspace.open(ws.root)


def test_a_failed_export_never_certifies_even_with_nothing_measured(tmp_path: Path) -> None:
    from tests.helpers.workspaces import custom

    ws = custom(tmp_path, "## UN-1: judged by nobody\npaths: notes.md\n\nNo check measures this.\n", "good.py")
    (ws.code / "notes.md").write_text("notes\n")
    (ws.code / "more.md").write_text("more\n")
    git(ws.code, "add", "-A")
    git(ws.code, "commit", "-qm", "two more files")
    ws = _limit_files(ws, 1)
    service = PlanService(ws)
    try:
        reports = service.measure()
    finally:
        service.close()
    assert [r.residual for r in reports] == [0]  # nothing measured, so nothing open, and no fresh pass asked for...
    assert not any(r.certified for r in reports)  # ...since a pass that measures nothing certifies nothing
    assert "more than 1 files" in reports[-1].export_error
    with Journal(ws.journal_path("plan"), readonly=True) as journal:
        assert journal.last("certificate") is None


def test_remove_tree_copes_with_read_only_and_unreadable_folders(tmp_path: Path) -> None:
    top = tmp_path / "t"
    (top / "a" / "b").mkdir(parents=True)
    (top / "a" / "b" / "f").write_text("x")
    (top / "closed").mkdir()
    (top / "closed" / "g").write_text("y")
    os.symlink("/etc", top / "a" / "etc")
    for path, mode in ((top / "a" / "b" / "f", 0o444), (top / "a" / "b", 0o555), (top / "a", 0o555),
                       (top / "closed", 0o000), (top, 0o555)):
        path.chmod(mode)
    _as_owner([sys.executable, "-I", "-c", "import sys, pathlib; from shared.export import remove_tree; "
               "remove_tree(pathlib.Path(sys.argv[1]))", str(top)])
    assert not top.exists() and Path("/etc/passwd").exists()
