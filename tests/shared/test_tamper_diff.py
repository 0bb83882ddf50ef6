"""What a change added to the tamper scan's hits (shared/measurement/tamper_diff.py): compared per file as a multiset
of (kind, construct as written), never by line. The turns and passes that use it are in
tests/build_loop/test_tamper_relative.py."""
from __future__ import annotations

import subprocess
from pathlib import Path

from shared.git import GitRepo
from shared.measurement.tamper_diff import added, contents, scan_change

OLD = (b"import sys\n\n\ndef caller():\n    return sys._getframe(1).f_code.co_name\n" + b"\n" * 20
       + b"def clamp(v, lo, hi):\n    return max(lo, min(v, hi + 1))\n")


def test_a_change_below_an_old_hit_adds_nothing() -> None:
    assert added({"m.py": OLD.replace(b"hi + 1", b"hi")}, {"m.py": OLD}) == []


def test_moved_code_is_not_new_and_changed_code_is() -> None:
    moved = b"import sys\n\n\ndef clamp(v, lo, hi):\n    return max(lo, min(v, hi))\n\n\n" \
            b"def caller():\n    return sys._getframe(1).f_code.co_name\n"
    assert added({"m.py": moved}, {"m.py": OLD}) == []
    deeper = OLD.replace(b"_getframe(1)", b"_getframe(2)")
    assert [(hit.line, hit.what) for hit in added({"m.py": deeper}, {"m.py": OLD})] == [(5, "sys._getframe()")]


def test_one_more_of_the_same_construct_is_named_where_the_change_wrote_it() -> None:
    twice = b"import sys\n\n\ndef spy():\n    return sys._getframe(1).f_code.co_name\n\n\n" + OLD
    hits = added({"m.py": twice}, {"m.py": OLD})
    assert [(hit.line, hit.kind) for hit in hits] == [(5, "frames")], hits  # not the old one, now on line 11


def test_a_new_file_and_an_import_added_to_an_old_line() -> None:
    assert [hit.line for hit in added({"n.py": OLD}, {})] == [5]
    assert added({"m.py": b"import os, gc\n"}, {"m.py": b"import gc\n"}) == []  # the line changed, not its import gc
    assert [hit.what for hit in added({"m.py": b"import gc, ctypes\n"}, {"m.py": b"import gc\n"})] == ["import ctypes"]


def test_a_compiled_module_that_changed_is_new() -> None:
    assert added({"m.pyc": b"\x00\x01"}, {"m.pyc": b"\x00\x01"}) == []
    assert [hit.kind for hit in added({"m.pyc": b"\x00\x02"}, {"m.pyc": b"\x00\x01"})] == ["unreadable"]


def test_a_change_is_read_from_a_real_repository(tmp_path: Path) -> None:
    repo = GitRepo.init(tmp_path / "repo")
    (tmp_path / "repo" / "m.py").write_bytes(OLD)
    (tmp_path / "repo" / "notes.txt").write_text("import gc\n")
    first = repo.commit_all("start", {}, role="build")
    changed = OLD.replace(b"hi + 1", b"hi") + b"import gc\n"
    blob = subprocess.run(["git", "-C", str(tmp_path / "repo"), "hash-object", "-w", "--stdin"], input=changed,
                          capture_output=True, check=True).stdout.decode().strip()
    before = contents(repo, first, ["m.py", "notes.txt", "gone.py"])
    assert list(before) == ["m.py"]  # only what the scan reads, and only what is there
    assert [(hit.line, hit.what) for hit in scan_change(repo, {"m.py": blob}, before)] == [(28, "import gc")]
    assert len(scan_change(repo, {"m.py": blob}, None)) == 2  # nothing to compare with: every hit
