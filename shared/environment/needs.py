"""What the project's tests need, chosen from what its files name (files.py): its run-time dependencies, and its test
extra or group or the requirements file its test configuration names (tox's [testenv]); not docs, lint, typing or
release tooling. Each requirement keeps the place that named it, and each place left out says why, for status and
doctor.

    needs = what_tests_need(files, extra=config.env.requirements)
    needs.requirements   # what pip or uv installs
    needs.named          # (requirement, where it was named)
    needs.left_out       # (file or section, why it was not taken)

Dev tooling (a `dev` extra or group, `requirements-dev.txt`) is taken only when nothing names the tests' own, and
then without what it includes for docs, lint, typing or release.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from shared.environment.files import (
    REQUIREMENT_FILES,
    Source,
    ToxConfig,
    egg_info_sources,
    from_the_index,
    pyproject_sources,
    requirements_file,
    setup_cfg_sources,
    tox_config,
)

TEST_WORDS = frozenset({"test", "tests", "testing", "pytest", "unittest", "unittests", "hatch-test"})
DEV_WORDS = frozenset({"dev", "devel", "develop", "development", "local", "default"})
RUNTIME_WORDS = frozenset({"base", "main", "prod", "production", "runtime", "install", "core", "common", "run"})
FOR_WORDS = {"docs": ("doc", "docs", "documentation", "sphinx", "mkdocs", "readthedocs", "rtd"),
             "lint": ("lint", "linting", "linters", "style", "format", "flake8", "ruff", "pylint", "black", "precommit",
                      "pre-commit", "quality"),
             "typing": ("typing", "types", "typecheck", "mypy", "pyright"),
             "release": ("release", "publish", "deploy", "build", "dist", "packaging", "upload"),
             "benchmarks": ("bench", "benchmark", "benchmarks", "perf", "profiling")}
OWN = "[env] requirements in banach.toml"


@dataclass(frozen=True)
class Needs:
    named: tuple[tuple[str, str], ...]  # (requirement, where it was named), in install order
    left_out: tuple[tuple[str, str], ...] = ()  # (file or section, why)

    @property
    def requirements(self) -> list[str]:
        return [requirement for requirement, _ in self.named]

    def adding(self, requirement: str, where: str) -> Needs:
        return Needs((*self.named, (requirement, where)), self.left_out)

    def lines(self) -> list[str]:
        """What was installed and why, then what was not, as status and doctor say it."""
        return ([f"{requirement}  <- {where}" for requirement, where in self.named]
                + [f"not installed: {where}: {why}" for where, why in self.left_out])


def purpose(name: str) -> str:
    """What a file or section is for, from its name: test, dev, runtime, docs, lint, typing, release, benchmarks, or ""."""
    stem = name.lower().removesuffix(".txt")
    words = set(re.split(r"[-_./ ]+", stem)) - {""}
    whole = words | {stem.rsplit("/", 1)[-1]}  # "hatch-test", "pre-commit"
    if whole & TEST_WORDS:
        return "test"
    for what, known in FOR_WORDS.items():
        if whole & set(known):
            return what
    if words & DEV_WORDS:
        return "dev"
    return "runtime" if words - {"requirements", "requirement", "reqs"} <= RUNTIME_WORDS else ""


def _sources(files: Mapping[str, bytes]) -> list[Source]:
    found: list[Source] = []
    for path, content in sorted(files.items()):
        text = content.decode("utf-8", errors="replace")
        if path == "pyproject.toml":
            found += pyproject_sources(text)
        elif path == "setup.cfg":
            found += setup_cfg_sources(text)
        elif path.endswith(".egg-info/requires.txt") and "/" not in path.removesuffix("/requires.txt"):
            found += egg_info_sources(path, text)
        elif REQUIREMENT_FILES.match(path):
            requirements, includes = requirements_file(path, text)
            runtime = path == "requirements.txt" or purpose(path) == "runtime"
            found.append(Source(path, path, requirements, includes, runtime=runtime))
    return found


def _why_not(source: Source, kind: str, taken_tests: list[str]) -> str:
    if kind == "dev":
        return f"dev tooling; the tests' own requirements are named in {', '.join(taken_tests)}"
    if kind in FOR_WORDS:
        return f"for {kind}, not for the tests"
    if source.where == source.name:
        return ("not named by the test configuration (tox's [testenv]) and not a test's by its name; add what the "
                "tests need to [env] requirements")
    return "an optional feature, not the tests' (name it in tox's [testenv] extras, or [env] requirements)"


def what_tests_need(files: Mapping[str, bytes], extra: tuple[str, ...] = ()) -> Needs:
    """What the project needs installed to run its tests, from its dependency files (read, never run). Each
    requirement the code's files name must be a package of the index (files.from_the_index); `extra` ([env]
    requirements) is the operator's and taken as given."""
    sources = _sources(files)
    tox = tox_config(files)
    by_path = {source.where: source for source in sources if source.where == source.name}
    kinds = {source.where: "runtime" if source.runtime else purpose(source.name) for source in sources}
    named_by_tox = _named_by_tox(tox, sources)
    tests = [s.where for s in sources if kinds[s.where] == "test" or s.where in named_by_tox]
    if tox is not None and tox.deps:
        tests.append(tox.where + " deps")
    taken: dict[str, str] = {}  # where -> why (in the order taken)
    for source in sources:
        kind = kinds[source.where]
        if source.where in named_by_tox:
            taken[source.where] = named_by_tox[source.where]
        elif kind in ("runtime", "test") or (kind == "dev" and not tests):
            taken[source.where] = ""
    named: list[tuple[str, str]] = []
    for source in sources:
        if source.where in taken:
            named += [(from_the_index(source.where, r), source.where + taken[source.where]) for r in source.requirements]
    if tox is not None:
        named += [(from_the_index(tox.where, requirement), tox.where + " deps") for requirement in tox.deps]
    left_out: list[tuple[str, str]] = []
    for source in [s for s in sources if s.where in taken]:
        named += _included(source, by_path, kinds, taken, left_out)
    for source in sources:
        if source.where not in taken:
            left_out.append((source.where, _why_not(source, kinds[source.where], tests)))
    chosen: dict[str, str] = {}
    for requirement, where in [*named, *((requirement, OWN) for requirement in extra)]:
        chosen.setdefault(requirement, where)  # the first place that names it
    return Needs(tuple(chosen.items()), tuple(left_out))


def _named_by_tox(tox: ToxConfig | None, sources: list[Source]) -> dict[str, str]:
    """The sources tox's [testenv] names (its extras, its -r files), with the words saying so."""
    if tox is None:
        return {}
    said = f" (named by {tox.where})"
    found = {source.where: said for source in sources if source.where in tox.includes}
    for source in sources:
        if source.where != source.name and source.name in tox.extras and " extra " in source.where:
            found[source.where] = said
    return found


def _included(source: Source, by_path: dict[str, Source], kinds: dict[str, str], taken: dict[str, str],
              left_out: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The requirements of the files a taken file includes (-r), and of theirs, without docs, lint, typing or release."""
    found: list[tuple[str, str]] = []
    for path in source.includes:
        if path in taken:
            continue
        included = by_path.get(path)
        if included is None:
            left_out.append((path, f"included by {source.where}, but not read: Banach reads requirements files named "
                                   "requirements*.txt, requirements/*.txt or *-requirements.txt"))
            continue
        if kinds[path] in FOR_WORDS:
            continue  # left out below, with its purpose
        taken[path] = f" (included by {source.where})"
        found += [(from_the_index(path, requirement), path + taken[path]) for requirement in included.requirements]
        found += _included(included, by_path, kinds, taken, left_out)
    return found
