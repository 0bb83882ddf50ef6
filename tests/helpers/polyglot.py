"""The TypeScript and Go projects of tests/data as a person brings them to Banach (issue 45): the project becomes the
user's git repository, `banach init --code` clones it, one `spec-loop add` lands a requirement with its conformance
test in the project's own language, and a SIMULATED agent (tests/helpers/agents/hostile/polyglot.py) takes the turns.

- wordcase-ts (tests/data/wordcase-ts): a TypeScript package, ESM, tested with `node --test` through tsx (its one
  devDependency, installed by `npm ci` from its package-lock.json); WC-1 asks for kebabCase.
- romannum-go (tests/data/romannum-go): a Go module with no requirements beyond the standard library; RN-1 asks for
  FromRoman.

Both are minimal real-shaped projects written for these tests (no small open-source package fit both: one tested
with node's own runner through tsx, one a Go module without modules to download, since this machine reaches no Go
module proxy); their layout, manifests and tests are those of ordinary projects of their kind."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers.workspaces import AGENTS, cli, git

DATA = Path(__file__).resolve().parents[1] / "data"
AGENT = AGENTS / "hostile" / "polyglot.py"

KEBAB_MD = """---
area: case
title: wordcase, kebab-case
---

## WC-1: kebabCase joins the words with dashes
priority: 1
paths: src/index.ts
tests: tests/kebab.test.ts

`kebabCase(text)`, exported by src/index.ts, is the text's words (as `words` splits them), lower-cased and joined
with "-".
"""

KEBAB_TEST = """import { test } from "node:test";
import assert from "node:assert/strict";
import { kebabCase } from "../src/index.ts";

test("kebabCase joins lower-cased words with dashes", () => {
  assert.equal(kebabCase("hello big world"), "hello-big-world");
});

test("kebabCase splits where the case changes", () => {
  assert.equal(kebabCase("parseHTTPResponse"), "parse-http-response");
});

test("kebabCase of nothing is nothing", () => {
  assert.equal(kebabCase("  "), "");
});
"""

ROMAN_MD = """---
area: numerals
title: romannum, reading numerals
---

## RN-1: FromRoman reads a Roman numeral
priority: 1
paths: roman/parse.go
tests: tests/fromroman_test.go

`roman.FromRoman(s)` is the number the numeral s writes ("MCMXCIV" is 1994), for every numeral ToRoman writes;
any other string is an error.
"""

ROMAN_TEST = """package canon

import (
\t"testing"

\t"example.com/romannum/roman"
)

func TestFromRomanReadsWhatToRomanWrites(t *testing.T) {
\tfor n := 1; n <= 3999; n++ {
\t\tnumeral, _ := roman.ToRoman(n)
\t\tif got, err := roman.FromRoman(numeral); err != nil || got != n {
\t\t\tt.Fatalf("FromRoman(%q) = %d, %v; want %d", numeral, got, err, n)
\t\t}
\t}
}

func TestFromRomanSubtracts(t *testing.T) {
\tif got, err := roman.FromRoman("MCMXCIV"); err != nil || got != 1994 {
\t\tt.Errorf("FromRoman(MCMXCIV) = %d, %v", got, err)
\t}
}

func TestFromRomanRefusesWhatIsNotANumeral(t *testing.T) {
\tfor _, text := range []string{"", "IIII", "MMMM", "ABC", "IC"} {
\t\tif _, err := roman.FromRoman(text); err == nil {
\t\t\tt.Errorf("FromRoman(%q) is not an error", text)
\t\t}
\t}
}
"""

PROJECTS = {
    "wordcase-ts": (DATA / "wordcase-ts", "WC-1", KEBAB_MD, "kebab.test.ts", KEBAB_TEST),
    "romannum-go": (DATA / "romannum-go", "RN-1", ROMAN_MD, "fromroman_test.go", ROMAN_TEST),
}


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def source_repo(tmp: Path, name: str) -> tuple[Path, str]:
    """The project as the user's own git repository; returns it and its first commit."""
    source = tmp / name
    shutil.copytree(PROJECTS[name][0], source)
    subprocess.run(["git", "init", "-q", "-b", "main", str(source)], check=True)
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", f"{name} as its author left it")
    return source, git(source, "rev-parse", "HEAD")


def workspace(tmp: Path, name: str, mode: str, *, backend: str = "landlock", agent_command: str = "",
              extra: str = "", document: str = "", more: dict[str, str] | None = None) -> tuple[Path, str]:
    """A workspace on the project with its requirement landed; returns the workspace and what `spec-loop add` said.
    The agent is the SIMULATED polyglot agent in `mode` unless agent_command is given."""
    source, _ = source_repo(tmp, name)
    ws = tmp / "ws"
    ok(cli("banach", "init", str(ws), "--code", str(source)))
    config = ws / "banach.toml"
    command = agent_command or f"{sys.executable} {AGENT} {mode}"
    text = config.read_text().replace('agent = "claude"', 'agent = "scripted"')
    text = text.replace('backend = "landlock"', f'backend = "{backend}"')
    text = text.replace("[isolation]\n", f'[isolation]\nread_paths = ["{AGENTS}"]  # the scripted agents\n', 1)
    config.write_text(text + f'\n[agents.scripted]\npreset = "command"   # SIMULATED: a scripted stand-in for an LLM\n'
                             f'command = "{command}"\n' + extra)
    _, _, standard, test_name, test_text = PROJECTS[name]
    drafts = tmp / "drafts"
    drafts.mkdir()
    (drafts / "requirement.md").write_text(document or standard)
    (drafts / test_name).write_text(test_text)
    for file, text in (more or {}).items():
        (drafts / file).write_text(text)
    added = ok(cli("spec-loop", "add", "requirement.md", test_name, *(more or {}), "-w", str(ws), cwd=drafts,
                   timeout=900))
    return ws, added


def code_head(ws: Path) -> str:
    return git(ws / "code", "rev-parse", "HEAD")
