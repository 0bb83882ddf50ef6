"""Bundles between real repositories in tmp dirs: the base out, a candidate back, and what a hostile worker may send."""
from __future__ import annotations

from pathlib import Path

import pytest

from shared.bundles import BundleError, bundle_commit, bundle_range, fetch_bundle, open_bundle, read_header
from shared.git import GitRepo, hardened_command

CANDIDATE = "refs/banach/candidates/item-1"


def commit(repo: GitRepo, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo.path / name).parent.mkdir(parents=True, exist_ok=True)
        (repo.path / name).write_text(text)
    return repo.commit_all(message, {}, role="build")


@pytest.fixture
def origin(tmp_path: Path) -> GitRepo:
    """The head's code repository: three commits, its git directory outside the work tree."""
    repo = GitRepo.init(tmp_path / "code", git_dir=tmp_path / "state" / "code.git")
    commit(repo, {"README.md": "hello\n"}, "one")
    commit(repo, {"src/app.py": "print('app')\n"}, "two")
    commit(repo, {"src/app.py": "print('app 2')\n", ".gitattributes": "* filter=evil\n"}, "three")
    return repo


def worker_copy(origin: GitRepo, tmp_path: Path, name: str = "worker") -> tuple[GitRepo, str]:
    """What a worker does with the base: open the bundle, check the tree out (hardened), ready for the agent."""
    bundle = bundle_commit(origin, "HEAD", tmp_path / "outbox")
    repo, tip = open_bundle(bundle, tmp_path / name, git_dir=tmp_path / f"{name}.git")
    repo.rollback(tip)
    return repo, tip


def packs(repo: GitRepo) -> list[str]:
    return sorted(path.name for path in (repo.git_dir / "objects" / "pack").iterdir())


def untouched(repo: GitRepo) -> tuple[object, list[str], list[str]]:
    objects = sorted(path.name for path in (repo.git_dir / "objects").iterdir())
    return repo.ref_state(), packs(repo), objects


def fsck(repo: GitRepo) -> int:
    return hardened_command(["fsck", "--strict", "--no-dangling"], git_dir=repo.git_dir).returncode


# the base, out to a worker --------------------------------------------------------------------------------

def test_a_commit_is_bundled_under_its_id_once_and_the_source_refs_are_left_alone(origin: GitRepo, tmp_path: Path) -> None:
    before = origin.ref_state()
    head = origin.head()
    bundle = bundle_commit(origin, "main", tmp_path / "outbox")
    assert bundle.name == f"{head}.bundle"
    header = read_header(bundle)
    assert (header.tip, header.prerequisites) == (head, ())
    stamp = bundle.stat()

    again = bundle_commit(origin, head or "", tmp_path / "outbox")
    assert again == bundle and (again.stat().st_ino, again.stat().st_mtime_ns) == (stamp.st_ino, stamp.st_mtime_ns)
    assert [path.name for path in (tmp_path / "outbox").iterdir()] == [bundle.name]
    assert origin.ref_state() == before


def test_a_damaged_cached_bundle_is_made_again(origin: GitRepo, tmp_path: Path) -> None:
    bundle = bundle_commit(origin, "HEAD", tmp_path / "outbox")
    bundle.write_bytes(b"# v2 git bundle\n")
    assert read_header(bundle_commit(origin, "HEAD", tmp_path / "outbox")).tip == origin.head()


def test_an_unknown_revision_is_not_bundled(origin: GitRepo, tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="not a commit"):
        bundle_commit(origin, "no-such-branch", tmp_path / "outbox")
    with pytest.raises(BundleError, match="not a commit"):
        bundle_commit(origin, "HEAD^{tree}", tmp_path / "outbox")


def test_opening_the_base_makes_a_repository_at_its_tip_without_writing_the_work_tree(origin: GitRepo, tmp_path: Path) -> None:
    bundle = bundle_commit(origin, "HEAD", tmp_path / "outbox")
    repo, tip = open_bundle(bundle, tmp_path / "worker", git_dir=tmp_path / "worker.git")
    assert tip == origin.head() == repo.resolve("refs/heads/main") == repo.head()
    assert repo.count_commits(None, tip) == 3
    assert list((tmp_path / "worker").iterdir()) == []
    assert (repo.git_dir / "info" / "attributes").exists()  # the tree's .gitattributes is outranked before any checkout
    assert fsck(repo) == 0

    repo.rollback(tip)
    assert (tmp_path / "worker" / "src" / "app.py").read_text() == "print('app 2')\n"
    assert not (tmp_path / "worker" / ".git").exists()


def test_opening_a_later_base_updates_the_same_repository(origin: GitRepo, tmp_path: Path) -> None:
    first = bundle_commit(origin, "HEAD", tmp_path / "outbox")
    open_bundle(first, tmp_path / "worker", git_dir=tmp_path / "worker.git")
    later = commit(origin, {"NEWS": "later\n"}, "four")
    second = bundle_commit(origin, "HEAD", tmp_path / "outbox")
    again, tip = open_bundle(second, tmp_path / "worker", git_dir=tmp_path / "worker.git")
    assert tip == later == again.resolve("refs/heads/main")
    assert again.count_commits(None, tip) == 4


# a candidate, back to the head ---------------------------------------------------------------------------

def test_a_candidate_comes_back_as_a_thin_bundle_and_is_fetched_under_a_ref(origin: GitRepo, tmp_path: Path) -> None:
    worker, base = worker_copy(origin, tmp_path)
    tip = commit(worker, {"src/feature.py": "FEATURE = 1\n"}, "the agent's change")
    bundle = bundle_range(worker, base, "HEAD", tmp_path / "inbox")
    assert bundle.name == f"{tip}-on-{base}.bundle"
    assert read_header(bundle).prerequisites == (base,)
    assert bundle.stat().st_size < bundle_commit(worker, "HEAD", tmp_path / "full").stat().st_size

    assert fetch_bundle(origin, bundle, CANDIDATE, base=base) == tip
    assert origin.resolve(CANDIDATE) == tip
    assert origin.show(tip, "src/feature.py") == "FEATURE = 1\n"
    assert origin.head() == base  # main is the integrator's to move
    assert not [path for path in (origin.git_dir / "objects").iterdir() if path.name.startswith("incoming-")]
    assert fsck(origin) == 0


def test_a_thin_bundle_opens_elsewhere_only_with_its_prerequisites(origin: GitRepo, tmp_path: Path) -> None:
    worker, base = worker_copy(origin, tmp_path)
    tip = commit(worker, {"src/feature.py": "FEATURE = 1\n"}, "change")
    bundle = bundle_range(worker, base, tip, tmp_path / "inbox")

    with pytest.raises(BundleError, match="lacks these prerequisite commits"):
        open_bundle(bundle, tmp_path / "bare-check", git_dir=tmp_path / "bare-check.git")
    assert GitRepo(tmp_path / "bare-check", git_dir=tmp_path / "bare-check.git").ref_state().refs == ()

    repo, opened = open_bundle(bundle, tmp_path / "check", git_dir=tmp_path / "check.git", prerequisites_from=origin)
    assert opened == tip and repo.count_commits(None, tip) == 4 and fsck(repo) == 0


def test_bundle_range_refuses_a_tip_that_does_not_descend_from_the_base(origin: GitRepo, tmp_path: Path) -> None:
    base = origin.head() or ""
    with pytest.raises(BundleError, match="does not descend"):
        bundle_range(origin, base, "HEAD~1", tmp_path / "inbox")
    with pytest.raises(BundleError, match="nothing to bundle"):
        bundle_range(origin, base, base, tmp_path / "inbox")


# what a hostile worker may send ---------------------------------------------------------------------------

def test_a_corrupted_bundle_is_refused_and_leaves_nothing(origin: GitRepo, tmp_path: Path) -> None:
    worker, base = worker_copy(origin, tmp_path)
    commit(worker, {"src/feature.py": "FEATURE = 1\n" * 200}, "change")
    bundle = bundle_range(worker, base, "HEAD", tmp_path / "inbox")
    data = bytearray(bundle.read_bytes())
    pack = read_header(bundle).pack_offset
    before = untouched(origin)

    flipped = tmp_path / "flipped.bundle"
    middle = pack + (len(data) - pack) // 2
    flipped.write_bytes(bytes(data[:middle]) + bytes(b ^ 0xFF for b in data[middle:middle + 16]) + bytes(data[middle + 16:]))
    truncated = tmp_path / "truncated.bundle"
    truncated.write_bytes(bytes(data[: pack + (len(data) - pack) // 2]))
    for damaged in (flipped, truncated):
        with pytest.raises(BundleError, match="refused"):
            fetch_bundle(origin, damaged, CANDIDATE, base=base)
        assert untouched(origin) == before


def test_a_tip_that_does_not_descend_from_the_base_is_refused_and_leaves_nothing(origin: GitRepo, tmp_path: Path) -> None:
    worker, base = worker_copy(origin, tmp_path)
    worker.rollback("HEAD~1")
    sibling = commit(worker, {"src/other.py": "OTHER = 1\n"}, "built on an older commit")
    bundle = bundle_range(worker, "HEAD~1", sibling, tmp_path / "inbox")  # its prerequisite is in the head's repo too
    before = untouched(origin)

    with pytest.raises(BundleError, match="does not descend from the base"):
        fetch_bundle(origin, bundle, CANDIDATE, base=base)
    assert untouched(origin) == before
    assert origin.resolve(CANDIDATE) == ""


def test_a_bundle_over_the_size_limit_is_refused_unread(origin: GitRepo, tmp_path: Path) -> None:
    worker, base = worker_copy(origin, tmp_path)
    commit(worker, {"big.bin": "x" * 10_000}, "change")
    bundle = bundle_range(worker, base, "HEAD", tmp_path / "inbox")
    with pytest.raises(BundleError, match="more than the 100 allowed"):
        fetch_bundle(origin, bundle, CANDIDATE, base=base, max_bytes=100)
    with pytest.raises(BundleError, match="more than the 100 allowed"):
        bundle_commit(origin, "HEAD", tmp_path / "small", max_bytes=100)
    assert not list((tmp_path / "small").iterdir())


def test_a_tree_with_a_dot_git_entry_fails_the_object_checks(origin: GitRepo, tmp_path: Path) -> None:
    worker, base = worker_copy(origin, tmp_path)
    blob = worker.command("hash-object", "-w", "--stdin", input=b"[core]\n\thooksPath = /tmp/evil\n").stdout.decode().strip()
    tree = worker.command("mktree", input=f"100644 blob {blob}\t.git\n".encode()).stdout.decode().strip()
    evil = worker.command("commit-tree", tree, "-p", base, "-m", "evil").stdout.decode().strip()
    bundle = bundle_range(worker, base, evil, tmp_path / "inbox")
    before = untouched(origin)

    with pytest.raises(BundleError, match="hasDotgit"):
        fetch_bundle(origin, bundle, CANDIDATE, base=base)
    assert untouched(origin) == before


def test_a_tip_that_is_not_a_commit_is_refused(origin: GitRepo, tmp_path: Path) -> None:
    tree = origin.tree_id("HEAD")
    header = f"# v2 git bundle\n-{origin.head()} base\n{tree} refs/heads/x\n\n".encode()
    pack = origin.command("pack-objects", "--stdout", "--revs", input=f"{origin.head()}\n".encode()).stdout
    bundle = tmp_path / "tree.bundle"
    bundle.write_bytes(header + pack)
    with pytest.raises(BundleError, match="is a tree, not a commit"):
        fetch_bundle(origin, bundle, CANDIDATE, base="HEAD")


@pytest.mark.parametrize(("text", "problem"), [
    (b"not a bundle\n\n", "not a git bundle"),
    (b"# v2 git bundle\n" + b"a" * 40 + b" refs/heads/x\n", "no end of header"),
    (b"# v2 git bundle\n" + b"a" * 40 + b" refs/heads/x\n" + b"b" * 40 + b" refs/heads/y\n\n", "names 2 refs"),
    (b"# v2 git bundle\n" + b"a" * 40 + b" HEAD\n\n", "exactly one ref under refs/"),
    (b"# v3 git bundle\n@filter=blob:none\n" + b"a" * 40 + b" refs/heads/x\n\n", "capability '@filter=blob:none'"),
    (b"# v2 git bundle\n-zzz\n" + b"a" * 40 + b" refs/heads/x\n\n", "malformed object id"),
])
def test_a_malformed_header_is_refused(tmp_path: Path, text: bytes, problem: str) -> None:
    bundle = tmp_path / "odd.bundle"
    bundle.write_bytes(text + b"PACK")
    with pytest.raises(BundleError, match=problem):
        read_header(bundle)
