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
# issue 39, route 2: the same reach for pytest's reports, the runner's reporter or sys.modules, spelled otherwise
SPELLED = {
    "sys.modules.get": ("import sys\nr = sys.modules.get('_pytest.reports')\n", "pytest"),
    "a name built at run time": ("import sys\nr = sys.modules.get('_py' + 'test.reports')\n", "modules"),
    "vars(module)[...]": ("import sys\nm = sys.modules[n]\nT = vars(m)['TestReport']\n", "pytest"),
    "setattr on a module": ("import sys\nr = sys.modules[k]\nsetattr(r, 'call_and_report', f)\n", "pytest"),
    "setattr on the standard library": ("import json\nsetattr(json, 'dumps', forged)\n", "modules"),
    "assigning the standard library": ("import json\njson.dumps = forged\n", "modules"),
    "operator.attrgetter": ("import operator, sys\nm = operator.attrgetter('modules')(sys)\n", "modules"),
    "operator.methodcaller": ("import operator, sys\nm = operator.methodcaller('get', name)(sys.modules)\n", "modules"),
    "getattr(sys, 'modules')": ("import sys\nm = getattr(sys, 'modules')\n", "modules"),
    "a module's __dict__": ("import sys\nm = sys.__dict__['modules']\n", "modules"),
    "globals()": ("import sys as s\nm = globals()['s'].__dict__['modules']\n", "modules"),
    "builtins looked up": ("imp = __builtins__['__import__']\n", "exec"),
    "vars(builtins)": ("import builtins\nimp = vars(builtins)['__import__']\n", "exec"),
    "importlib.import_module": ("import importlib\nr = importlib.import_module('_pytest.reports')\n", "pytest"),
    "a relative import_module": ("import importlib\nr = importlib.import_module('.reports', '_pytest')\n", "pytest"),
    "__import__ of pluggy": ("p = __import__('pluggy')\n", "pytest"),
    "__import__ of ctypes": ("c = __import__('ctypes.util')\n", "ctypes"),
    "type(...).__setattr__": ("type(report).__setattr__(report, 'outcome', 'passed')\n", "modules"),
    "type(...).__getattribute__": ("import sys\nm = type(sys).__getattribute__(sys, 'modules')\n", "modules"),
    "the runner's own module": ("import sys\nR = sys.modules['__main__'].Reporter\n", "pytest"),
    "import __main__": ("import __main__\n", "pytest"),
    "pkgutil.resolve_name": ("import pkgutil\nT = pkgutil.resolve_name('_pytest.reports:TestReport')\n", "pytest"),
    "pydoc.locate": ("import pydoc\nT = pydoc.locate('_pytest.reports.TestReport')\n", "pytest"),
    "pytest's public names": ("import pytest\npytest.TestReport.from_item_and_call = f\n", "pytest"),
    "is pytest running": ("import sys\nif '_pytest' in sys.modules:\n    pass\n", "pytest"),
    "walking sys.modules": ("import sys\nfiles = [m.__file__ for m in sys.modules.values()]\n", "modules"),
    "the class tree": ("classes = object.__subclasses__()\n", "gc"),
    "traceback.extract_stack": ("import traceback\nstack = traceback.extract_stack()\n", "frames"),
    "a format string": ("x = '{0.__globals__}'.format(f)\n", "frames"),
    "Banach's settings": ("import os\ncanon = os.environ['BANACH_CANON']\n", "pytest"),
    "posix": ("import posix\nposix._exit(0)\n", "exit"),
    "os._exit as a value": ("import os, threading\nthreading.Timer(1, os._exit, (0,)).start()\n", "exit"),
    "getattr as a value": ("import functools, sys\nm = functools.reduce(getattr, ['modules'], sys)\n", "exec"),
    "a descriptor by number": ("for fd in range(3, 256):\n    open(fd, 'w').write('x')\n", "descriptors"),
    "a pipe handed on": ("import subprocess\nsubprocess.Popen(['sh'], pass_fds=(3,))\n", "descriptors"),
    "a hook by another name": ("import pytest\n@pytest.hookimpl(specname='pytest_runtest_logreport')\n"
                               "def spy(report):\n    pass\n", "pytest"),
    "code replaced": ("f.__code__ = g.__code__\n", "modules"),
    "a pickle": ("import pickle\npickle.loads(data)\n", "exec"),
    "a local function's own import": ("def f():\n    s = __import__('sys')\n    return s.modules.get(n)\n", "modules"),
}
ORDINARY = [
    "object.__setattr__(self, 'x', 1)\n",  # a frozen dataclass's __post_init__
    "import sys\nm = sys.modules[__name__]\nn = sys.modules[cls.__module__]\n",
    "if __name__ == '__main__':\n    main()\n",
    "v = getattr(self, name)\nsetattr(self, name, v)\nd = vars(self)\n",
    "n = type(self).__name__\n",
    "class A:\n    def __setstate__(self, state):\n        self.__dict__ = state\n",
    "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\nos.environ['X'] = '1'\n",
    "from setuptools import setup\nsetup(name='x', install_requires=['pytest', 'pluggy>=1'])\n",
    "import sys\nif 'numpy' in sys.modules:\n    pass\n",
    "import typing as t\n\n\ndef make(cls):\n    t = object.__new__(cls)\n    t.environment = 1\n",
    "def render(text, globals, vars=None):\n    return text.format(**globals), vars\n",  # parameters named so
    '"""A docstring that talks about f_back and _pytest."""\n',
]


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_each_kind_is_found_with_its_file_and_line(kind: str) -> None:
    hits = scan({"pkg/mod.py": ("x = 1\n" + HOSTILE[kind]).encode()})
    assert any(hit.kind == kind and hit.path == "pkg/mod.py" and hit.line >= 2 for hit in hits), hits
    assert all(KINDS[hit.kind] in str(hit) for hit in hits)


@pytest.mark.parametrize("source", HIDDEN)
def test_the_usual_ways_of_hiding_a_call_are_found(source: str) -> None:
    assert scan({"mod.py": source.encode()}), source


@pytest.mark.parametrize("spelling", sorted(SPELLED))
def test_equivalent_spellings_are_found_with_their_kind(spelling: str) -> None:
    source, kind = SPELLED[spelling]
    hits = scan({"mod.py": source.encode()})
    assert any(hit.kind == kind for hit in hits), (spelling, hits)


@pytest.mark.parametrize("source", ORDINARY)
def test_ordinary_spellings_of_the_same_builtins_are_clean(source: str) -> None:
    assert scan({"mod.py": source.encode()}) == [], source


def test_a_file_imported_without_source_is_a_hit_named_by_its_content() -> None:
    hits = scan({"pkg/forge.pyc": b"\x00\x01", "pkg/_c.cpython-311-x86_64-linux-gnu.so": b"\x7fELF", "data.bin": b"x"})
    assert [(hit.path, hit.kind) for hit in hits] == [("pkg/_c.cpython-311-x86_64-linux-gnu.so", "ctypes"),
                                                       ("pkg/forge.pyc", "unreadable")]
    assert scan({"pkg/forge.pyc": b"\x00\x02"})[0].key != hits[1].key  # changed bytes: another hit


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
