"""The TypeScript and Go projects of tests/data as a person brings them to Banach (issue 45): the project becomes the
user's git repository, `banach init --code` clones it, one `spec-loop add` lands a requirement with its conformance
test in the project's own language, and a SIMULATED agent (tests/helpers/agents/hostile/polyglot.py) takes the turns.

Both are real open-source projects, vendored at a release that has a real bug fixed upstream since; the requirement
asks for that fix and its conformance test begins with the fix's own test (tests/data/*/VENDORED.md):

- change-case: change-case 5.4.2 (tests/data/change-case-5.4.2), a TypeScript package, ESM, tested with
  `node --test` through tsx (its one devDependency, installed by `npm ci` from its package-lock.json). CK-1: the
  functions of `change-case/keys` pass their options to the keys of nested objects and of objects in arrays
  (blakeembrey/change-case#334, released in 5.4.3).
- go-humanize: go-humanize 1.0.1 (tests/data/go-humanize-1.0.1), a Go module with no requirements beyond the
  standard library. BIG-1: `BigComma` leaves its argument as it was (dustin/go-humanize#130, commit 402bd47)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers.workspaces import AGENTS, cli, git

DATA = Path(__file__).resolve().parents[1] / "data"
AGENT = AGENTS / "hostile" / "polyglot.py"

KEYS_MD = """---
area: keys
title: change-case, the keys of nested objects
---

## CK-1: the keys functions pass their options on to nested objects and arrays
priority: 1
paths: src/keys.ts
tests: tests/keys.test.ts

The functions of src/keys.ts (`camelCase(object, depth, options)` and the others) change the keys of nested objects
and of objects inside arrays, down to `depth`, with the same options as the top level's keys (change-case#334).
"""

KEYS_TEST = """import { test } from "node:test";
import assert from "node:assert/strict";
import { camelCase, snakeCase } from "../src/keys.ts";

// change-case's own case for the fix (#334, src/keys.spec.ts in 5.4.3), as a node:test test
test("options reach the keys of objects inside arrays", () => {
  assert.deepEqual(
    camelCase({ outer_property_1_2: "outer", an_array: [{ inner_property_3_4: true }] }, Infinity, {
      mergeAmbiguousCharacters: true,
    }),
    { outerProperty12: "outer", anArray: [{ innerProperty34: true }] },
  );
});

test("options reach the keys of nested objects", () => {
  assert.deepEqual(
    snakeCase({ userName: { firstName: "ada", version2: "v2" } }, Infinity, { separateNumbers: true }),
    { user_name: { first_name: "ada", version_2: "v2" } },
  );
});

test("the depth still bounds which keys change", () => {
  assert.deepEqual(
    camelCase({ outer_1_2: { inner_3_4: { kept_5_6: "deep" } } }, 2, { mergeAmbiguousCharacters: true }),
    { outer12: { inner34: { kept_5_6: "deep" } } },
  );
});
"""

BIGCOMMA_MD = """---
area: numbers
title: go-humanize, BigComma and its argument
---

## BIG-1: BigComma leaves its argument as it was
priority: 1
paths: comma.go
tests: tests/bigcomma_test.go

`humanize.BigComma(b)` writes b with commas ("-1,234,567") and leaves b as it was, so that writing a number twice
writes it the same (go-humanize#130).
"""

BIGCOMMA_TEST = """package canon

import (
\t"math/big"
\t"testing"

\t"github.com/dustin/go-humanize"
)

// go-humanize's own test of the fix (comma_test.go at 402bd47, go-humanize#130), as a black-box test of the package
func TestHumanizeBigIntMutation(t *testing.T) {
\tvalue := big.NewInt(1000000)
\tvalue = value.Mul(value, value)
\texpected := humanize.BigComma(value)
\tactual := humanize.BigComma(value)
\tif expected != actual {
\t\tt.Log(expected, " != ", actual)
\t\tt.Fail()
\t}
}

func TestBigCommaLeavesANegativeNumberAsItWas(t *testing.T) {
\tvalue := big.NewInt(-1234567)
\tif got := humanize.BigComma(value); got != "-1,234,567" {
\t\tt.Errorf("BigComma(-1234567) = %q", got)
\t}
\tif got := value.String(); got != "-1234567" {
\t\tt.Errorf("BigComma changed its argument to %s", got)
\t}
}

func TestBigCommaWritesTheSameTwice(t *testing.T) {
\tvalue := big.NewInt(987654321)
\thumanize.BigComma(value)
\tif got := humanize.BigComma(value); got != "987,654,321" {
\t\tt.Errorf("BigComma(987654321), asked again, = %q", got)
\t}
}
"""

PROJECTS = {
    "change-case": (DATA / "change-case-5.4.2", "CK-1", KEYS_MD, "keys.test.ts", KEYS_TEST),
    "go-humanize": (DATA / "go-humanize-1.0.1", "BIG-1", BIGCOMMA_MD, "bigcomma_test.go", BIGCOMMA_TEST),
}


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def source_repo(tmp: Path, name: str) -> tuple[Path, str]:
    """The project as the user's own git repository; returns it and its first commit."""
    source = tmp / name
    shutil.copytree(PROJECTS[name][0], source, ignore=shutil.ignore_patterns("VENDORED.md"))
    subprocess.run(["git", "init", "-q", "-b", "main", str(source)], check=True)
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", f"{name} as its release left it")
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
