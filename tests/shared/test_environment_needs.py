"""What the project's tests need (shared/environment/needs.py): its run-time dependencies and what its test
configuration names, never docs, lint, typing or release tooling, each with the place that named it. Read from the
files' contents, as real projects lay them out."""
from __future__ import annotations

from shared.environment.needs import purpose, what_tests_need

# Jinja's layout: pip-compiled requirements files per purpose, dev.txt made of the others, tox naming tests.txt
TEMPLATING = {
    "pyproject.toml": b'[project]\nname = "templating"\ndependencies = ["MarkupSafe>=2.0"]\n'
                      b'[project.optional-dependencies]\ni18n = ["Babel>=2.7"]\n',
    "tox.ini": b"[tox]\nenvlist = py3{9,10,11}\n[testenv]\npackage = wheel\ndeps = -r requirements/tests.txt\n"
               b"commands = pytest -v {posargs}\n[testenv:docs]\ndeps = -r requirements/docs.txt\n",
    "requirements/tests.txt": b"# pip-compile tests.in\niniconfig==2.0.0\n    # via pytest\npytest==8.3.3\n",
    "requirements/docs.txt": b"sphinx==8.0.2\nalabaster==1.0.0\n",
    "requirements/typing.txt": b"mypy==1.11.2\n",
    "requirements/build.txt": b"build==1.2.2\n",
    "requirements/dev.txt": b"-r docs.txt\n-r tests.txt\n-r typing.txt\npre-commit==3.8.0\ntox==4.20.0\n",
}


def test_tox_names_the_tests_requirements_and_nothing_for_docs_typing_or_release_is_taken() -> None:
    needs = what_tests_need(TEMPLATING)
    assert needs.named == (("MarkupSafe>=2.0", "pyproject.toml [project] dependencies"),
                           ("iniconfig==2.0.0", "requirements/tests.txt (named by tox.ini [testenv])"),
                           ("pytest==8.3.3", "requirements/tests.txt (named by tox.ini [testenv])"))
    left = dict(needs.left_out)
    assert left["requirements/docs.txt"] == "for docs, not for the tests"
    assert left["requirements/typing.txt"] == "for typing, not for the tests"
    assert left["requirements/build.txt"] == "for release, not for the tests"
    assert left["requirements/dev.txt"].startswith("dev tooling; the tests' own requirements are named in "
                                                   "requirements/tests.txt")
    assert left["pyproject.toml extra 'i18n'"].startswith("an optional feature")
    assert "iniconfig==2.0.0  <- requirements/tests.txt (named by tox.ini [testenv])" in needs.lines()


def test_without_anything_named_for_tests_dev_tooling_is_taken_without_what_it_includes_for_docs() -> None:
    """python-dateutil's sdist: its tests' requirements are only in requirements-dev.txt."""
    needs = what_tests_need({
        "setup.cfg": b"[options]\ninstall_requires = six >= 1.5\n",
        "requirements-dev.txt": b"-r requirements/docs.txt\npytest >= 3.0\nhypothesis >= 3.30\n",
        "requirements/docs.txt": b"sphinx\n",
    })
    assert needs.requirements == ["pytest >= 3.0", "hypothesis >= 3.30", "six >= 1.5"]
    assert dict(needs.left_out) == {"requirements/docs.txt": "for docs, not for the tests"}


def test_test_extras_groups_and_environments_and_the_extras_tox_names() -> None:
    pyproject = b"""[project]
name = "demo"
dependencies = ["attrs"]
[project.optional-dependencies]
cli = ["click"]
lint = ["ruff"]
[dependency-groups]
test = ["pytest", {include-group = "coverage"}]
coverage = ["coverage"]
typing = ["mypy"]
[tool.hatch.envs.hatch-test]
extra-dependencies = ["pytest-mock"]
[tool.hatch.envs.docs]
dependencies = ["mkdocs"]
"""
    needs = what_tests_need({"pyproject.toml": pyproject, "tox.ini": b"[testenv]\nextras = cli\ndeps =\n  freezegun\n"
                                                                      b"  py38: mock\n"}, ("extra-one",))
    assert needs.named == (("attrs", "pyproject.toml [project] dependencies"),
                           ("click", "pyproject.toml extra 'cli' (named by tox.ini [testenv])"),
                           ("pytest", "pyproject.toml dependency group 'test'"),
                           ("coverage", "pyproject.toml dependency group 'test'"),
                           ("pytest-mock", "pyproject.toml hatch environment 'hatch-test'"),
                           ("freezegun", "tox.ini [testenv] deps"),
                           ("extra-one", "[env] requirements in banach.toml"))
    assert {where for where, _ in needs.left_out} == {"pyproject.toml extra 'lint'", "pyproject.toml dependency group "
                                                      "'coverage'", "pyproject.toml dependency group 'typing'",
                                                      "pyproject.toml hatch environment 'docs'"}


def test_a_file_is_known_by_its_name() -> None:
    assert [purpose(name) for name in ("requirements.txt", "requirements/base.txt", "requirements/tests.txt",
                                       "tests/requirements.txt", "test-requirements.txt", "requirements-dev.txt",
                                       "doc-requirements.txt", "requirements/lint.txt", "requirements/mypy.txt",
                                       "requirements-py3.txt")] == [
        "runtime", "runtime", "test", "test", "test", "dev", "docs", "lint", "typing", ""]
