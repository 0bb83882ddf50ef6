"""The project's environment: what it needs is read from its files (never run), where its packages are is found
from its configuration or its tree, and building it runs the project's code only inside the sandbox. The walks of
real projects through every loop are in tests/test_real_projects.py."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shared.environment import ProjectEnvError, import_roots, project_env, requirements
from shared.environment.cache import EnvCache
from shared.environment.installer import Installer
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.workspaces import cli, custom, example, git, set_config

UV = pytest.mark.skipif(not Installer.available("uv"), reason="uv is not installed (it is in the test extra)")
PYPROJECT = b"""[project]
name = "demo"
dependencies = ["requests>=2", "attrs"]
[project.optional-dependencies]
tests = ["freezegun", "pytest"]
docs = ["sphinx"]
[dependency-groups]
dev = ["hypothesis"]
"""


def test_requirements_come_from_every_kind_of_dependency_file_and_only_test_extras() -> None:
    found = requirements({
        "pyproject.toml": PYPROJECT,
        "setup.cfg": b"[options]\ninstall_requires =\n    click>=8\n[options.extras_require]\ntest =\n    mock\n",
        "demo.egg-info/requires.txt": b"text-unidecode>=1.3\n\n[unidecode]\nUnidecode>=1.1.1\n\n[test]\ncoverage\n",
        "requirements-dev.txt": b"# tools\nruff==0.5  # pinned\n-e .\n-r other.txt\n--index-url http://x\n.\n",
        "docs/requirements.txt": b"mkdocs\n",  # not a requirements file of the project's root
    }, ("extra-one",))
    assert found == ["text-unidecode>=1.3", "coverage", "requests>=2", "attrs", "freezegun", "pytest", "click>=8",
                     "mock", "extra-one"]  # dev tooling (the dev group, requirements-dev.txt) left out: tests are named
    assert requirements({}) == [] and requirements({"pyproject.toml": b"not [toml"}) == []


@pytest.mark.parametrize("named", ["evil @ file:///tmp/evil", "evil@ https://example.org/evil.tar.gz", "-e /tmp/evil",
                                   "--index-url=http://example.org/simple"])
def test_the_codes_files_name_packages_of_the_index_only(named: str) -> None:
    """A direct reference or a pip option in a file the agent can write would install code from where the code points;
    the operator's [env] requirements are taken as given."""
    pyproject = f"[project]\nname = 'demo'\ndependencies = [{named!r}]\n".encode()
    with pytest.raises(ProjectEnvError, match=r"^pyproject\.toml \[project\] dependencies names"):
        requirements({"pyproject.toml": pyproject})
    assert requirements({}, ("evil @ file:///tmp/evil",)) == ["evil @ file:///tmp/evil"]


@pytest.mark.parametrize(("files", "tree", "roots"), [
    ({}, ["pkg/__init__.py", "tests/test_x.py"], ("",)),
    ({}, ["src/humanize/__init__.py", "tests/__init__.py"], ("src",)),
    ({}, ["src/a/__init__.py", "b/__init__.py"], ("",)),  # a package at the root too: the root
    ({"pyproject.toml": b'[tool.pytest.ini_options]\npythonpath = ["lib", "."]\n'}, [], ("lib", ".")),
    ({"pyproject.toml": b'[tool.setuptools]\npackage-dir = {"" = "source"}\n'}, [], ("source",)),
    ({"pyproject.toml": b'[tool.setuptools.packages.find]\nwhere = ["python"]\n'}, [], ("python",)),
    ({"pyproject.toml": b'[tool.hatch.build.targets.wheel]\npackages = ["src/foo"]\n'}, [], ("src",)),
], ids=["flat", "src", "both", "pytest-pythonpath", "package-dir", "find-where", "hatch"])
def test_import_roots(files: dict[str, bytes], tree: list[str], roots: tuple[str, ...]) -> None:
    assert import_roots(files, tree) == roots
    assert import_roots(files, tree, ("custom",)) == ("custom",)


def test_a_project_that_needs_nothing_runs_on_banachs_interpreter(tmp_path: Path) -> None:
    ws = example(tmp_path)
    env = project_env(ws, "plan", ws.code_repo(), git(ws.code, "rev-parse", "HEAD"))
    assert env.key == "" and env.roots == ("",) and not EnvCache.of(ws, "plan").entries()


@pytest.mark.slow
@pytest.mark.landlock
@pytest.mark.parametrize("tool", ["pip", pytest.param("uv", marks=UV)])
def test_building_the_environment_runs_the_projects_setup_py_only_in_the_sandbox(tmp_path: Path, tool: str) -> None:
    """install_project runs the project's setup.py (code the agent may have written): it can write only a folder of
    its own. The control: the same setup.py run plainly does write its marker. By pip and by uv ([env] tool)."""
    ws = example(tmp_path, backend="landlock")
    set_config(ws.root, extra=f'[env]\ntool = "{tool}"\n')
    marker = ws.root / "PWNED-setup-py"
    setup = (f"import pathlib\ntry:\n    pathlib.Path({str(marker)!r}).write_text('ran')\nexcept OSError as exc:\n"
             f"    print('DENIED', exc)\nfrom setuptools import setup\nsetup(name='textkit', version='0', packages=[])\n")
    (ws.code / "setup.py").write_text(setup)
    (ws.code / "requirements.txt").write_text("iniconfig\n")
    git(ws.code, "add", "setup.py", "requirements.txt")
    git(ws.code, "commit", "-qm", "a setup.py")
    ws = Workspace.open(ws.root)
    env = project_env(ws, "plan", ws.code_repo(), git(ws.code, "rev-parse", "HEAD"), ws.code)
    assert env.key and Path(env.python).is_file()
    assert not marker.exists(), "the project's setup.py wrote outside the environment"
    record = json.loads((Path(env.python).parents[2] / "env.json").read_text())
    assert record["requirements"][0] == ["iniconfig", "requirements.txt"] and record["project_installed"] == "yes", record
    assert record["tool"] == tool and (tool == "uv") != (Path(env.python).parent / "pip").exists()  # uv makes no pip
    said = subprocess.run([env.python, "-c", "import iniconfig, pytest; print('ok')"], capture_output=True, text=True)
    assert said.stdout.strip() == "ok", said.stderr
    again = project_env(ws, "plan", ws.code_repo(), git(ws.code, "rev-parse", "HEAD"), ws.code)
    assert again == env  # the same key: built once
    for role in ("spec", "build"):  # the other roles use plan's, read-only, and build none of their own
        assert project_env(ws, role, ws.code_repo(), git(ws.code, "rev-parse", "HEAD"), ws.code) == env  # type: ignore[arg-type]
        assert not (ws.role_dir(role) / "env" / env.key).exists()  # type: ignore[arg-type]
    subprocess.run(["python3", "setup.py", "--name"], cwd=ws.code, capture_output=True, check=False)
    assert marker.exists()  # the control: outside the sandbox it does write


DEPENDENT = """## DEP-1: the module exists
paths: **
checks:
  - test -f mod.py

mod.py exists.
"""


@pytest.mark.slow
@pytest.mark.parametrize("requirement", ["iniconfig", "banach-test-no-such-package==1.0"])
def test_a_turn_that_changes_the_dependencies_is_measured_in_their_environment(tmp_path: Path, requirement: str) -> None:
    """The agent adds a dependency: its change is measured in the environment the new files need, built then; one
    that cannot be built is rolled back with pip's words, like any red."""
    ws = custom(tmp_path, DEPENDENT, f"adds_dependency.py {requirement}")
    cli("plan-loop", "once", "--workspace", str(ws.root))
    result = cli("build-loop", "once", "--workspace", str(ws.root), timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        row = journal.last("iteration.ended")
    assert row is not None
    built = list(EnvCache.of(ws, "build").root.glob("*/env.json"))
    if requirement == "iniconfig":
        assert row.data["decision"] == "keep", row.data
        assert [json.loads(path.read_text())["requirements"][0] for path in built] == [["iniconfig", "requirements.txt"]]
    else:
        assert row.data["decision"] == "rollback", row.data
        assert row.data["reason"].startswith("the change breaks the project's environment: the project's environment "
                                             "could not be built"), row.data["reason"]
        assert "banach-test-no-such-package" in row.data["environment_error"] and not built
        assert not (ws.code / "requirements.txt").exists()  # rolled back


DEBIAN_PYTHON = Path(f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}")


@pytest.mark.slow
@pytest.mark.parametrize("base", ["banach's", pytest.param("debian's", marks=pytest.mark.skipif(
    not DEBIAN_PYTHON.is_file() or DEBIAN_PYTHON.resolve() == Path(sys.executable).resolve(),
    reason=f"no distribution interpreter at {DEBIAN_PYTHON} beside Banach's"))])
def test_conformance_runs_see_the_environments_packages_and_no_others(tmp_path: Path, base: str) -> None:
    """The runner starts without the site module (so nothing an environment's build left runs before pytest) and puts
    the venv's site-packages on sys.path itself: the venv's, with the folders its .pth files name, never the base
    interpreter's, whose packages (click, Banach's own) the project did not ask for. Debian's interpreter too, whose
    patched site.getsitepackages() names dist-packages folders (the first version followed it and found no pytest)."""
    from shared.measurement import conformance
    from shared.process import run

    ws = example(tmp_path / "w")
    if base == "debian's":
        set_config(ws.root, extra=f'[env]\npython = "{DEBIAN_PYTHON}"\n')
    (ws.code / "requirements.txt").write_text("iniconfig\n")
    git(ws.code, "add", "requirements.txt")
    git(ws.code, "commit", "-qm", "a dependency")
    ws = Workspace.open(ws.root)
    env = project_env(ws, "plan", ws.code_repo(), git(ws.code, "rev-parse", "HEAD"))
    [site] = list(Path(env.python).parents[1].glob("lib/python*/site-packages"))
    (site / "extra_dir").mkdir()
    (site / "extra_dir" / "extra_module.py").write_text("VALUE = 7\n")
    (site / "extra.pth").write_text("# a path line is honoured, an import line never runs\nextra_dir\n"
                                    f"import pathlib; pathlib.Path({str(tmp_path / 'ran')!r}).write_text('x')\n")
    canon = tmp_path / "canon"
    (canon / "tests").mkdir(parents=True)
    (canon / "tests" / "test_env.py").write_text(
        "import importlib.util\n\n\ndef test_the_environments_packages_and_no_others():\n"
        "    import extra_module\n    import iniconfig\n\n    assert extra_module.VALUE == 7 and iniconfig\n"
        "    assert importlib.util.find_spec('click') is None\n")
    assert Path(env.python).parents[1].joinpath("pyvenv.cfg").is_file()
    check = conformance.prepare(canon, ws.code, ("tests/test_env.py",), tmp_path / "run", python=env.python,
                                roots=env.roots)
    outcome = run(check.request(env={"PATH": "/usr/bin:/bin"}, timeout=120, limits=None))
    judgement = check.judge(outcome)
    check.close()
    assert judgement.results == {"tests/test_env.py::test_the_environments_packages_and_no_others": True}, \
        judgement.void or judgement.output
    assert not (tmp_path / "ran").exists()
