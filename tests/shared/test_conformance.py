"""Conformance runs are judged by per-test outcomes and a canary, never by the exit code; the project's own
modules neither shadow Banach's runner nor are shadowed by Banach's packages."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shared.measurement import conformance
from shared.measurement.canaries import COUNT
from shared.process import Request, run

PASSING = "def test_one():\n    assert True\n\n\ndef test_two():\n    assert 1 + 1 == 2\n"


def project(tmp: Path, files: dict[str, str], tests: dict[str, str]) -> tuple[Path, Path]:
    code, canon = tmp / "code", tmp / "canon"
    for rel, text in files.items():
        (code / rel).parent.mkdir(parents=True, exist_ok=True)
        (code / rel).write_text(text)
    for rel, text in tests.items():
        (canon / rel).parent.mkdir(parents=True, exist_ok=True)
        (canon / rel).write_text(text)
    code.mkdir(exist_ok=True)
    return code, canon


def measure(code: Path, canon: Path, nodes: tuple[str, ...], tmp: Path) -> conformance.Judgement:
    measured = conformance.prepare(canon, code, nodes, tmp / "run")
    try:
        outcome = run(measured.request(env={"PATH": "/usr/bin:/bin"}, timeout=120, limits=None))
    finally:
        measured.close()
    assert not measured.folder.exists()
    return measured.judge(outcome)


def test_every_expected_test_is_judged_by_its_own_outcome(tmp_path: Path) -> None:
    code, canon = project(tmp_path, {"lib.py": "def f():\n    return 2\n"},
                          {"tests/test_lib.py": "from lib import f\n\n\ndef test_good():\n    assert f() == 2\n\n\n"
                                                "def test_bad():\n    assert f() == 3\n\n\nclass TestMore:\n"
                                                "    def test_method(self):\n        assert f()\n"})
    verdict = measure(code, canon, ("tests/test_lib.py",), tmp_path)
    assert verdict.results == {"tests/test_lib.py::test_good": True, "tests/test_lib.py::test_bad": False,
                               "tests/test_lib.py::TestMore::test_method": True}
    assert not verdict.void and not verdict.passed


def test_an_early_exit_with_code_0_fails_what_did_not_pass(tmp_path: Path) -> None:
    code, canon = project(tmp_path, {"lib.py": "import os\n\ndef f():\n    os._exit(0)\n"},
                          {"tests/test_a.py": "def test_first():\n    assert True\n",
                           "tests/test_b.py": "from lib import f\n\n\ndef test_second():\n    f()\n"})
    verdict = measure(code, canon, ("tests/test_a.py", "tests/test_b.py"), tmp_path)
    assert verdict.results["tests/test_b.py::test_second"] is False
    assert not verdict.passed
    assert "before pytest finished" in verdict.void  # no finish, no verdict: test_first's pass counts for nothing
    assert verdict.results["tests/test_a.py::test_first"] is False
    plain = run(Request(("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", str(canon / "tests")), cwd=code,
                        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(code), "PYTHONDONTWRITEBYTECODE": "1"}))
    assert plain.returncode == 0  # the control: an exit-code judge calls it a pass


def test_a_collection_error_fails_every_test_of_that_file(tmp_path: Path) -> None:
    code, canon = project(tmp_path, {"lib.py": "this is not python\n"},
                          {"tests/test_a.py": "import lib\n\n\ndef test_x():\n    pass\n\n\ndef test_y():\n    pass\n",
                           "tests/test_b.py": PASSING})
    verdict = measure(code, canon, ("tests/test_a.py", "tests/test_b.py"), tmp_path)
    assert verdict.results == {"tests/test_a.py::test_x": False, "tests/test_a.py::test_y": False,
                               "tests/test_b.py::test_one": True, "tests/test_b.py::test_two": True}
    assert verdict.collect_errors and not verdict.void


def test_a_node_id_whose_file_fails_to_import_fails_without_voiding_the_measurement(tmp_path: Path) -> None:
    """The ordinary 'not written yet': with a '::name' node id pytest stops at the collection error before any test,
    the canary's too. Every expected test fails; nothing could pass unseen, so the run is not void."""
    code, canon = project(tmp_path, {}, {"tests/test_a.py": "from lib import mean\n\n\ndef test_x():\n    pass\n"})
    verdict = measure(code, canon, ("tests/test_a.py::test_x",), tmp_path)
    assert verdict.results == {"tests/test_a.py::test_x": False}
    assert verdict.collect_errors and not verdict.void


def test_a_runner_patched_from_the_code_voids_the_measurement(tmp_path: Path) -> None:
    patch = ("import _pytest.runner as r\n_real = r.call_and_report\n\n"
             "def forged(item, when, log=True, **kw):\n    rep = _real(item, when, log=False, **kw)\n"
             "    rep.outcome = 'passed'\n    if log:\n        item.ihook.pytest_runtest_logreport(report=rep)\n"
             "    return rep\n\nr.call_and_report = forged\n\ndef f():\n    return 3\n")
    code, canon = project(tmp_path, {"lib.py": patch},
                          {"tests/test_lib.py": "from lib import f\n\n\ndef test_f():\n    assert f() == 2\n"})
    verdict = measure(code, canon, ("tests/test_lib.py",), tmp_path)
    assert verdict.void and "canary" in verdict.void
    assert verdict.results == {"tests/test_lib.py::test_f": False}
    # the control: judged by its exit code, as plan judged it before, the same run is a pass
    plain = run(Request(("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", str(canon / "tests")), cwd=code,
                        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(code), "PYTHONDONTWRITEBYTECODE": "1"}))
    assert plain.returncode == 0, plain.describe()


def test_project_modules_named_like_banachs_or_pytest_are_the_projects(tmp_path: Path) -> None:
    files = {"shared/__init__.py": "VALUE = 'project shared'\n", "canon/__init__.py": "VALUE = 'project canon'\n",
             "pytest.py": "import os\nos._exit(0)\n", "conftest.py": "import os\nos._exit(0)\n",
             "sitecustomize.py": "import os\nos._exit(0)\n"}
    tests = {"tests/test_names.py": "import shared, canon\n\n\ndef test_shared():\n    assert shared.VALUE == 'project shared'\n"
                                    "\n\ndef test_canon():\n    assert canon.VALUE == 'project canon'\n"}
    code, canon = project(tmp_path, files, tests)
    verdict = measure(code, canon, ("tests/test_names.py",), tmp_path)
    assert verdict.passed, verdict.summary()


def test_parametrized_tests_pass_only_when_every_case_does(tmp_path: Path) -> None:
    code, canon = project(tmp_path, {}, {"tests/test_p.py": "import pytest\n\n\n@pytest.mark.parametrize('n', [1, 2, 3])\n"
                                                            "def test_small(n):\n    assert n < 3\n"})
    verdict = measure(code, canon, ("tests/test_p.py",), tmp_path)
    assert verdict.results == {"tests/test_p.py::test_small": False}


@pytest.mark.parametrize("node", ["tests/test_b.py::test_one", "tests/test_b.py"])
def test_a_node_id_or_a_whole_file(tmp_path: Path, node: str) -> None:
    code, canon = project(tmp_path, {}, {"tests/test_b.py": PASSING})
    verdict = measure(code, canon, (node,), tmp_path)
    assert verdict.passed
    assert set(verdict.results) == ({node} if "::" in node else {"tests/test_b.py::test_one", "tests/test_b.py::test_two"})


def test_what_a_person_reads_has_no_trace_of_the_canaries(tmp_path: Path) -> None:
    tests = "from lib import f\n\n\ndef test_good():\n    assert f() == 2\n\n\ndef test_bad():\n    assert f() == 3\n"
    code, canon = project(tmp_path, {"lib.py": "def f():\n    return 2\n"}, {"tests/test_lib.py": tests})
    measured = conformance.prepare(canon, code, ("tests/test_lib.py",), tmp_path / "run")
    try:
        outcome = run(measured.request(env={"PATH": "/usr/bin:/bin"}, timeout=120, limits=None))
        on_disk = (measured.canon / "tests" / "test_lib.py").read_text()
    finally:
        measured.close()
    planted = json.loads(measured.sources)[str(measured.canon / "tests" / "test_lib.py")]
    verdict = measured.judge(outcome)
    names = [node.rsplit("::", 1)[1] for node in measured.planted.nodes]
    assert len(names) >= COUNT and all(f"def {name}(" in planted for name in names)
    assert on_disk == ""  # the run's copy holds a placeholder: the sources came on the runner's standard input
    assert outcome.report and all(name in outcome.report for name in names)  # the control: pytest ran and reported them
    assert not any(name in verdict.output for name in names), verdict.output
    assert "1 failed, 1 passed" in verdict.output  # the closing counts are canon's alone
    assert "test_lib.py:9: AssertionError" in verdict.output  # test_bad's line in canon's file, not in the copy
    assert str(measured.canon) not in verdict.output and "run/canon" not in verdict.output


def test_the_code_under_test_finds_no_test_source_on_disk_and_no_canon_name(tmp_path: Path) -> None:
    """Issue 39: the run's test files are placeholders (the sources come on the runner's standard input) and its tests
    run under names of the run's own, so code that reads the files it is tested from, or watches which test runs,
    learns neither canon's asserts nor canon's names."""
    lib = ("import os, sys\n\n\ndef seen():\n    found = ''\n    for arg in sys.argv[1:]:\n"
           "        path = arg.split('::')[0]\n        if os.path.isfile(path):\n            found += open(path).read()\n"
           "    return found\n\n\ndef running():\n    return os.environ.get('PYTEST_CURRENT_TEST', '')\n")
    tests = ("from lib import running, seen\n\n\ndef test_sources_are_not_on_disk():\n    assert seen() == ''\n\n\n"
             "def test_names_are_the_runs_own():\n    assert 'test_names_are_the_runs_own' not in running()\n"
             "    assert running()\n")
    code, canon = project(tmp_path, {"lib.py": lib}, {"tests/test_hidden.py": tests})
    verdict = measure(code, canon, ("tests/test_hidden.py",), tmp_path)
    assert verdict.passed, verdict.summary() + verdict.output
    assert set(verdict.results) == {"tests/test_hidden.py::test_sources_are_not_on_disk",
                                    "tests/test_hidden.py::test_names_are_the_runs_own"}  # reported as canon names them
