"""Issue 14's "done when": a real third-party library, walked as a new user walks it, every message checked.

more-itertools 10.5.0 from its source distribution (tests/data/more-itertools-10.5.0, see VENDORED.md) becomes
the user's git repository; `banach init --code` clones it; one `spec-loop add` brings a requirement together with
its conformance test (a first try with a check that cannot run is refused by the dry run); `banach run
--until-certified` drives a SIMULATED agent (tests/helpers/agents/running_mean.py, a scripted stand-in for an
LLM: a stub first, which the governor rolls back, then the right function) until plan certifies; `banach
deliver --with-tests` puts the result and the test that justified it onto a branch of the user's repository,
where the user's own pytest passes.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shared.isolation.sandbox import landlock_abi
from tests.helpers.workspaces import AGENTS, cli, git

pytestmark = pytest.mark.slow

LIBRARY = Path(__file__).resolve().parent / "data" / "more-itertools-10.5.0"
REQUIREMENT = """---
area: recipes
title: more-itertools recipes
---

## MI-1: running_mean yields the mean so far
priority: 1
paths: more_itertools/recipes.py
tests: tests/test_running_mean.py::test_running_mean, tests/test_running_mean.py::test_nothing_gives_nothing{checks}

`more_itertools.running_mean(iterable)` yields, for each item, the mean of the items up to and including it.
"""
CONFORMANCE_TEST = """from more_itertools import running_mean


def test_running_mean():
    assert list(running_mean([2, 4, 6])) == [2.0, 3.0, 4.0]


def test_nothing_gives_nothing():
    assert list(running_mean([])) == []
"""


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_more_itertools_from_init_to_deliver(tmp_path: Path) -> None:
    source, ws = tmp_path / "more-itertools", tmp_path / "ws"
    shutil.copytree(LIBRARY, source)

    # init: a folder that is not a git repository is refused, and nothing is left behind
    refused = cli("banach", "init", str(ws), "--code", str(source))
    assert refused.returncode == 1 and not ws.exists()
    assert f"{source} is not a git repository. Make it one (git init && git add -A && git commit -m start" in refused.stderr
    subprocess.run(["git", "init", "-q", "-b", "main", str(source)], check=True)
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "more-itertools 10.5.0 (recipes) from its sdist")
    start = git(source, "rev-parse", "HEAD")
    made = ok(cli("banach", "init", str(ws), "--code", str(source)))
    assert made.startswith(f"workspace ready in {ws}\nnext:\n") and f"banach up -w {ws}" in made
    config = ws / "banach.toml"
    text = config.read_text().replace('agent = "claude"', 'agent = "scripted"')
    if landlock_abi() < 1:  # the default backend needs Landlock; without it the walk still runs, unenforced
        text = text.replace('backend = "landlock"', 'backend = "none"')
    config.write_text(text + f'\n[agents.scripted]\npreset = "command"   # SIMULATED: a scripted stand-in for an LLM\n'
                             f'command = "{sys.executable} {AGENTS / "running_mean.py"}"\n')

    # a requirement with its conformance test, in one spec-loop add; a check that cannot run is refused first
    (tmp_path / "running_mean.md").write_text(REQUIREMENT.format(checks="\nchecks:\n  - mi-doctest more_itertools"))
    (tmp_path / "test_running_mean.py").write_text(CONFORMANCE_TEST)
    first = cli("spec-loop", "add", "running_mean.md", "test_running_mean.py", "-w", str(ws), cwd=tmp_path)
    assert first.returncode == 1
    assert first.stdout.startswith("refused running_mean.md, test_running_mean.py (one change: none of it landed, "
                                   "canon stays at v0")
    assert (f"running_mean.md:11: MI-1: the check `mi-doctest more_itertools` cannot run at all against the code at "
            f"{start[:12]}: mi-doctest: command not found (exit 127)") in first.stdout
    (tmp_path / "running_mean.md").write_text(REQUIREMENT.format(checks=""))
    added = ok(cli("spec-loop", "add", "running_mean.md", "test_running_mean.py", "-w", str(ws), cwd=tmp_path))
    assert added.splitlines()[0] == \
        f"dry run at code {start[:12]}: MI-1 conformance tests runs and fails (the residual build will work on)"
    assert added.splitlines()[1].startswith("note: MI-1 has no sealed cases, so a pass rests on in-process tests")
    assert added.splitlines()[2:] == ["accepted running_mean.md, test_running_mean.py as canon v1 (added MI-1; "
                                      "conformance tests tests/test_running_mean.py)"]

    # the loops in the foreground until plan certifies
    ran = cli("banach", "run", "--until-certified", "--max-turns", "6", "-w", str(ws), timeout=600)
    lines = ok(ran).splitlines()
    head = git(ws / "code", "rev-parse", "HEAD")
    item = re.search(r"open: (MI-1\.[0-9a-f]{6})", ran.stdout)
    assert item, ran.stdout
    item_id = item.group(1)
    assert lines[0] == "spec: inbox is empty; canon stays at v1"
    assert lines[1].startswith(f"plan pass 1: canon v1 x code {start[:12]}: residual 1 (")
    assert lines[2].startswith(f"build iteration 1 ({item_id}): rollback: no progress") and lines[2].endswith("[turn 1 of 6]")
    assert re.fullmatch(rf"build iteration 2 \({item_id}\): keep: failing \d+ -> 0 \[commit {head[:12]}, turn 2 of 6\]",
                        lines[3]), lines[3]
    assert lines[4].startswith(f"plan pass 2: canon v1 x code {head[:12]}: residual 0")
    assert lines[5].startswith(f"plan pass 3: canon v1 x code {head[:12]}: CERTIFIED: a fresh pass found nothing")
    assert lines[6] == (f"run: CERTIFIED: plan pass 3 found nothing open at canon v1 x code {head[:12]} (1 of 1 "
                        f"requirements measured), after 2 build turn(s); deliver it with: banach deliver -w {ws}")
    assert len(lines) == 7
    # the isolation banner is doctor's and -v's (issue 43); only the warning of backend 'none' is always said
    assert ("isolation" in ran.stderr) == (landlock_abi() < 1), ran.stderr

    # status finds the workspace from a folder inside it, as git finds its repository
    status = ok(cli("banach", "status", cwd=ws / "code" / "more_itertools"))
    assert f"workspace   {ws}" in status and "certified   yes" in status and "residual    0 (plan pass 3)" in status

    # deliver: the governed commit and the test that justified it, onto a branch of the user's repository
    delivered = ok(cli("banach", "deliver", "--with-tests", "-w", str(ws)))
    tip = git(source, "rev-parse", "banach/result")
    assert delivered.splitlines() == [
        f"delivered 1 governed commit(s) to branch banach/result of {source} (now {tip[:12]}; a new branch), on top of "
        f"{start[:12]} (where the workspace was cloned from)",
        f"  {head[:12]}  {item_id}  requirements MI-1  canon v1  iteration 2  fix {item_id}: running_mean yields the "
        "mean so far",
        f"  {tip[:12]}  canon's conformance tests (canon v1): tests/test_running_mean.py",
        f"certified: plan pass 3 found nothing open at canon v1 x code {head[:12]} (1 of 1 requirements measured), "
        "which is the delivered code",
        "  resting on in-process tests: code that knows their names or values can forge them: MI-1",
        f"see it: git -C {source} log --format='%h %s' banach/result",
    ]
    assert git(source, "rev-parse", "HEAD") == start and not git(source, "status", "--porcelain")
    assert git(source, "log", "--format=%(trailers:key=Banach-Item,valueonly)", "-1", head) == item_id
    # the user checks the result out and runs the delivered test with their own pytest
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "-C", str(source), "worktree", "add", "-q", str(checkout), "banach/result"], check=True)
    mine = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_running_mean.py"],
                          cwd=checkout, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(checkout), "HOME": str(tmp_path)})
    assert mine.returncode == 0 and "2 passed" in mine.stdout, mine.stdout + mine.stderr
