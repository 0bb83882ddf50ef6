"""Issue 43, "your own agent in ten minutes": the ten-line program of docs/agents.md ('Your own program'), taken from
the page as it stands, is build's agent on a small real library (python-slugify 8.0.4 from its sdist, under git), through
the real executables as a new user runs them: `banach init --code`, `spec-loop add`, `banach run --until-certified`.

It fixes the one requirement it knows (SLUG-1) and is kept; the other (SLUG-2) it cannot fix, so that item is blocked
after its round, and what waits for a person leads status and `banach run`'s last line with the failing assertion and
the one action that clears it; `build-loop unblock SLUG-2` takes the requirement's id and says what it may spend."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from shared.isolation.sandbox import landlock_abi
from tests.helpers.workspaces import cli, git

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SLUGIFY = ROOT / "tests" / "data" / "python-slugify-8.0.4"
REQUIREMENTS = """---
area: slug
title: python-slugify, as I use it
---

## SLUG-1: stopwords are dropped whatever their case
priority: 1
paths: slugify/slugify.py
tests: tests/test_stopwords.py::test_stopwords_match_whatever_their_case

With `lowercase=False` the slug keeps the text's case, and a stopword is still dropped when the text has it in
another case: `slugify("The Quick Fox", stopwords=["the"], lowercase=False)` is `Quick-Fox`.

## SLUG-2: language names keep their symbols, spelled out
priority: 2
paths: slugify/slugify.py
tests: tests/test_stopwords.py::test_symbols_are_spelled_out

`slugify("C++ and C#")` is `c-plus-plus-and-c-sharp`: a '+' or '#' after a letter is spelled out, not dropped.
"""
TESTS = """from slugify import slugify


def test_stopwords_match_whatever_their_case():
    assert slugify("The Quick Fox", stopwords=["the"], lowercase=False) == "Quick-Fox"


def test_symbols_are_spelled_out():
    assert slugify("C++ and C#") == "c-plus-plus-and-c-sharp"
"""


def docs_program() -> str:
    """The program docs/agents.md shows, as a reader copies it."""
    page = (ROOT / "docs" / "agents.md").read_text()
    section = page[page.index("A program of ten lines that works"):]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)  # type: ignore[union-attr]


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_ten_line_program_of_the_docs_is_an_agent_and_a_blocked_item_says_why(tmp_path: Path) -> None:
    program = docs_program()
    assert len([line for line in program.splitlines() if line.strip()]) == 10, program
    source, ws = tmp_path / "slugify", tmp_path / "ws"
    shutil.copytree(SLUGIFY, source, ignore=shutil.ignore_patterns("VENDORED.md"))
    subprocess.run(["git", "init", "-q", "-b", "main", str(source)], check=True)
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "python-slugify 8.0.4 from its sdist")
    ok(cli("banach", "init", str(ws), "--code", str(source)))
    config = (ws / "banach.toml").read_text()
    assert 'agent = "claude"' in config and 'provider = "anthropic"' in config and 'preset = "command"' in config

    (tmp_path / "my_agent.py").write_text(program)
    config = config.replace('agent = "claude"', 'agent = "mine"\nmax_attempts = 2')
    config = config.replace('command = "python3 my_agent.py"', f'command = "python3 {tmp_path / "my_agent.py"}"')
    if landlock_abi() < 1:
        config = config.replace('backend = "landlock"', 'backend = "none"')
    (ws / "banach.toml").write_text(config)
    (tmp_path / "slug.md").write_text(REQUIREMENTS)
    (tmp_path / "test_stopwords.py").write_text(TESTS)
    ok(cli("spec-loop", "add", "slug.md", "test_stopwords.py", "-w", str(ws), cwd=tmp_path, timeout=900))

    ran = cli("banach", "run", "--until-certified", "--max-turns", "6", "-w", str(ws), timeout=1200)
    out = ran.stdout
    assert ran.returncode == 1, out + ran.stderr
    assert re.search(r"build iteration \d+ \(SLUG-1\.\w+\): keep: failing \d+ -> 0", out), out
    last = out.strip().splitlines()[-1]
    assert last.startswith("run: NOT CERTIFIED: waiting for you: SLUG-2 is blocked after 2 turns in 1 round"), last
    assert "test_symbols_are_spelled_out" in last and "-> assert 'c-and-c' == 'c-plus-plus-and-c-sharp'" in last, last
    assert last.endswith(f"do: build-loop unblock SLUG-2 -w {ws}"), last

    status = ok(cli("banach", "status", "-w", str(ws))).splitlines()
    assert status[0] == "WAITING FOR YOU (1)", status
    assert status[1].startswith("  1. SLUG-2 is blocked after 2 turns in 1 round (no attempt of its last round changed "
                                "anything)"), status
    assert "why: tests/test_stopwords.py:" in status[2] and "assert 'c-and-c' == 'c-plus-plus-and-c-sharp'" in status[2]
    assert status[3] == f"     do:  build-loop unblock SLUG-2 -w {ws}"
    assert "None" not in "\n".join(status)

    unblocked = ok(cli("build-loop", "unblock", "SLUG-2", "-w", str(ws)))
    assert re.match(r"unblocked SLUG-2 \(item SLUG-2\.\w+\) under canon v1: it may spend up to 6 more turns \(2 attempts "
                    r"a round, up to 3 rounds", unblocked), unblocked
    after = ok(cli("banach", "status", "-w", str(ws)))
    assert "WAITING FOR YOU" not in after, after
