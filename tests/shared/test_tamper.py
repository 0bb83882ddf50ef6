"""The tamper scan finds what code under test has no business doing, by syntax, and canon can allow a kind per
requirement. The turns and passes it stops are in tests/redteam/test_governor_attacks.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from canon.parser import CanonSyntaxError, parse_document
from shared.app import example as example_package
from shared.measurement.tamper import KINDS, scan, unallowed

HOSTILE = {
    "gc": "import gc\nfor o in gc.get_objects():\n    pass\n",
    "proc": "fds = __import__('os').listdir('/proc/self/fd')\n",
    "descriptors": "import os\nos.write(5, b'{}')\n",
    "exit": "import os as o\no._exit(0)\n",
    "modules": "import sys\nsys.modules['pytest'] = object()\n",
    "pytest": "import _pytest.runner as r\nr.call_and_report = None\n",
    "frames": "import sys\nf = sys._getframe(1).f_back\n",
    "exec": "import base64\nexec(base64.b64decode(b'cHJpbnQoMSk='))\n",
    "rename": "import os\nos.replace('a', 'b')\n",
    "fifo": "import os\nos.mkfifo('report.jsonl')\n",
    "ctypes": "import ctypes\n",
}
HIDDEN = [
    "getattr(__import__('os'), '_exit')(0)\n",  # a constant name through getattr
    "import os\nname = '_' + 'exit'\ngetattr(os, name)(0)\n",  # a name built at run time
    "from os import _exit as leave\nleave(0)\n",
    "import importlib\nimportlib.import_module('gc')\n",
    "import builtins\nbuiltins.print = len\n",
    "def pytest_runtest_logreport(report):\n    report.outcome = 'passed'\n",
]


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_each_kind_is_found_with_its_file_and_line(kind: str) -> None:
    hits = scan({"pkg/mod.py": ("x = 1\n" + HOSTILE[kind]).encode()})
    assert any(hit.kind == kind and hit.path == "pkg/mod.py" and hit.line >= 2 for hit in hits), hits
    assert all(KINDS[hit.kind] in str(hit) for hit in hits)


@pytest.mark.parametrize("source", HIDDEN)
def test_the_usual_ways_of_hiding_a_call_are_found(source: str) -> None:
    assert scan({"mod.py": source.encode()}), source


def test_ordinary_code_and_the_examples_reference_changes_are_clean() -> None:
    root = Path(example_package.__file__).parent
    files = {str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*.py")}
    assert len(files) > 10
    assert scan(files) == []
    assert scan({"m.py": b"import os, re, json\nfrom pathlib import Path\n\n\ndef f(p):\n    return Path(p).read_text()\n"}) == []


def test_only_python_files_are_read_and_a_pth_file_is_a_hit() -> None:
    assert scan({"notes.txt": b"import gc", "data.json": b'"/proc/self/fd"'}) == []
    assert [hit.kind for hit in scan({"evil.pth": b"import os; os.system('x')"})] == ["modules"]


def test_a_file_too_large_to_scan_is_a_hit_and_one_that_does_not_parse_is_not() -> None:
    assert [hit.kind for hit in scan({"big.py": b"#" * 2_000_001})] == ["unreadable"]
    assert scan({"broken.py": b"def (:\n"}) == []  # it cannot be imported either: its tests fail on their own


DOCUMENT = """## TK-1: slugify
paths: textkit/slug.py
tests: tests/test_slug.py
{allows}
Makes slugs.

## TK-2: counting
paths: textkit/count.py
tests: tests/test_count.py

Counts words.
"""


def test_a_requirement_allows_kinds_in_the_files_it_owns_only() -> None:
    from canon.model import Canon

    document = parse_document(DOCUMENT.format(allows="allows: exit, gc"), "requirements/textkit.md")
    canon = Canon(version=1, commit="c" * 40, documents=(document,), test_files=())
    hits = scan({"textkit/slug.py": b"import gc, os\nos._exit(0)\nimport ctypes\n",
                 "textkit/count.py": b"import gc\n"})
    left = unallowed(hits, canon)
    assert sorted((hit.path, hit.kind) for hit in left) == [("textkit/count.py", "gc"), ("textkit/slug.py", "ctypes")]
    assert [hit.kind for hit in unallowed(hits, canon, ("TK-2",))] == ["gc", "gc", "exit", "ctypes"]


def test_an_unknown_kind_in_canon_is_refused_with_its_line() -> None:
    with pytest.raises(CanonSyntaxError) as caught:
        parse_document(DOCUMENT.format(allows="allows: exit, everything"), "requirements/textkit.md")
    assert "requirements/textkit.md:4" in str(caught.value) and "'everything' is not a kind of the tamper scan" in str(
        caught.value)
