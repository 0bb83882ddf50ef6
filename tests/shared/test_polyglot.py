"""Conformance tests in node and go measured per test, with the pytest run's rules (shared/measurement/polyglot.py):
real node and go, real child processes, code under test that is wrong, exits early or forges its runner's output.
Unconfined here (the rules are the judge's); tests/redteam/test_polyglot_attacks.py runs the same code in views."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.polyglot_runs import measure

pytestmark = [pytest.mark.skipif(not shutil.which("node"), reason="needs node (apt-get install nodejs)"),
              pytest.mark.skipif(not shutil.which("go"), reason="needs go (apt-get install golang-go)")]

NODE_TEST = '''import { test } from "node:test";
import assert from "node:assert/strict";
import { kebab } from "../src/index.mjs";

test("joins words with dashes", () => {
  assert.equal(kebab("hello big world"), "hello-big-world");
});

test("lower-cases", () => {
  assert.equal(kebab("Hello World"), "hello-world");
});
'''

OTHER_TEST = '''import { test } from "node:test";
import assert from "node:assert/strict";
import { shout } from "../src/index.mjs";

test("shouts", () => {
  assert.equal(shout("hey"), "HEY!");
});
'''

GO_TEST = '''package canon

import (
\t"testing"

\t"example.com/kebab/kebab"
)

func TestJoins(t *testing.T) {
\tif got := kebab.Kebab("hello big world"); got != "hello-big-world" {
\t\tt.Errorf("got %q", got)
\t}
}

func TestLowerCases(t *testing.T) {
\tif got := kebab.Kebab("Hello World"); got != "hello-world" {
\t\tt.Errorf("got %q", got)
\t}
}
'''

RIGHT_JS = 'export const kebab = (text) => text.toLowerCase().split(" ").join("-");\n'
RIGHT_GO = ('package kebab\n\nimport "strings"\n\nfunc Kebab(s string) string {\n'
            '\treturn strings.Join(strings.Fields(strings.ToLower(s)), "-")\n}\n')


def _project(tmp: Path, language: str, code: str, *, extra: str = "") -> tuple[Path, Path]:
    canon, project = tmp / "canon", tmp / "code"
    (canon / "tests").mkdir(parents=True)
    if language == "node":
        (canon / "tests" / "kebab.test.mjs").write_text(NODE_TEST)
        (canon / "tests" / "shout.test.mjs").write_text(OTHER_TEST)
        (project / "src").mkdir(parents=True)
        (project / "package.json").write_text('{"name": "kebab", "type": "module"}\n')
        (project / "src" / "index.mjs").write_text(code + extra + 'export const shout = (t) => t.toUpperCase() + "!";\n')
    else:
        (canon / "tests" / "kebab_test.go").write_text(GO_TEST)
        (project / "kebab").mkdir(parents=True)
        (project / "go.mod").write_text("module example.com/kebab\n\ngo 1.19\n")
        (project / "kebab" / "kebab.go").write_text(code)
    return canon, project


NODES = {"node": ("tests/kebab.test.mjs",), "go": ("tests/kebab_test.go",)}
NAMES = {"node": ("joins words with dashes", "lower-cases"), "go": ("TestJoins", "TestLowerCases")}


@pytest.mark.parametrize("language", ["node", "go"])
def test_right_code_passes_every_test_and_wrong_code_fails_them_by_name(tmp_path: Path, language: str) -> None:
    right = RIGHT_JS if language == "node" else RIGHT_GO
    canon, project = _project(tmp_path / "right", language, right)
    verdict = measure(tmp_path / "right" / "run", canon, project, NODES[language])
    file = NODES[language][0]
    assert verdict.passed, verdict.summary() + verdict.output
    assert set(verdict.results) == {f"{file}::{name}" for name in NAMES[language]}
    wrong = right.replace('"-"', '"_"')
    canon, project = _project(tmp_path / "wrong", language, wrong)
    verdict = measure(tmp_path / "wrong" / "run", canon, project, NODES[language])
    assert not verdict.void and verdict.failing == sorted(f"{file}::{name}" for name in NAMES[language])
    shown = verdict.output
    assert all(name in shown for name in NAMES[language]), shown  # what the agent reads names canon's tests
    assert "hello_big_world" in shown, shown
    assert not re.search(r"test_[a-z]{10}|Test[A-Z][a-z]{9}\b", shown), shown  # no run name: no canary, no renaming


@pytest.mark.parametrize("language", ["node", "go"])
def test_code_that_ends_its_test_process_with_success_measures_nothing(tmp_path: Path, language: str) -> None:
    if language == "node":
        code = 'export const kebab = (text) => { process.exit(0); };\n'
    else:
        code = 'package kebab\n\nimport "syscall"\n\nfunc Kebab(s string) string {\n\tsyscall.Exit(0)\n\treturn ""\n}\n'
    canon, project = _project(tmp_path, language, code)
    verdict = measure(tmp_path / "run", canon, project, NODES[language])
    assert verdict.void and not any(verdict.results.values()), verdict.summary()


@pytest.mark.parametrize("language", ["node", "go"])
def test_code_that_forges_its_runners_output_for_every_test_voids_the_run(tmp_path: Path, language: str) -> None:
    if language == "node":  # straight into the channel: the runner's standard output, through /proc (no Landlock here)
        forger = '''import { openSync, readFileSync, writeSync } from "node:fs";
const names = [...readFileSync(process.env.BANACH_SUITE_PATH, "utf8").matchAll(/^test\\("([^"]+)"/gm)].map((m) => m[1]);
const channel = openSync(`/proc/${process.ppid}/fd/1`, "w");
const file = process.env.BANACH_SUITE_FILE;
for (const name of names) writeSync(channel, JSON.stringify({test: `${file}::${name}`, when: "call", outcome: "passed"}) + "\\n");
writeSync(channel, JSON.stringify({finished: 0}) + "\\n");
process.kill(process.ppid, "SIGKILL");
'''
        code = forger + 'export const kebab = (text) => "";\n'
    else:  # go's own lines on the binary's standard output, for every test function it holds, then an exit
        code = '''package kebab

import ("debug/elf"; "fmt"; "os"; "strings"; "syscall")

func init() {
\texe, _ := os.Executable()
\tbinary, _ := elf.Open(exe)
\tsymbols, _ := binary.Symbols()
\tfor _, symbol := range symbols {
\t\tname := symbol.Name[strings.LastIndex(symbol.Name, ".")+1:]
\t\tif strings.HasPrefix(name, "Test") && strings.Contains(symbol.Name, "banachcanon") {
\t\t\tfmt.Printf("=== RUN   %s\\n--- PASS: %s (0.00s)\\n", name, name)
\t\t}
\t}
\tfmt.Println("PASS")
\tsyscall.Exit(0)
}

func Kebab(s string) string { return "" }
'''
    canon, project = _project(tmp_path, language, code)
    verdict = measure(tmp_path / "run", canon, project, NODES[language])
    assert verdict.void and "canary" in verdict.void, verdict.summary() + verdict.output
    assert not any(verdict.results.values())


def test_one_files_code_cannot_forge_another_files_outcome(tmp_path: Path) -> None:
    """Each file is a run of its own: code imported by kebab.test.mjs writes a pass for shout.test.mjs's test into
    every descriptor it has and its runner's standard output; the shout run, a process tree and channel of its own,
    still reads its own failure."""
    forger = '''import { openSync, readdirSync, writeSync } from "node:fs";
if (process.env.BANACH_SUITE_FILE === "tests/kebab.test.mjs") {
  const line = JSON.stringify({test: "tests/shout.test.mjs::shouts", when: "call", outcome: "passed"}) + "\\n";
  for (const fd of readdirSync("/proc/self/fd")) { try { writeSync(Number(fd), line); } catch {} }
  try { writeSync(openSync(`/proc/${process.ppid}/fd/1`, "w"), line); } catch {}
}
'''
    canon, project = _project(tmp_path, "node", RIGHT_JS, extra=forger)
    (project / "src" / "index.mjs").write_text((project / "src" / "index.mjs").read_text().replace(
        'export const shout = (t) => t.toUpperCase() + "!";', 'export const shout = (t) => t;'))
    verdict = measure(tmp_path / "run", canon, project, ("tests/kebab.test.mjs", "tests/shout.test.mjs"))
    assert verdict.results["tests/shout.test.mjs::shouts"] is False, verdict.summary()


def test_the_test_process_is_not_handed_the_report_channel(tmp_path: Path) -> None:
    """The runner's child (where the tests and the code run) inherits no descriptor of the channel: a line written to
    every descriptor it holds never reaches the report (which would void the run)."""
    writer = '''import { readdirSync, writeSync } from "node:fs";
for (const fd of readdirSync("/proc/self/fd")) {
  if (Number(fd) > 2) { try { writeSync(Number(fd), JSON.stringify({finished: 0}) + "\\n"); } catch {} }
}
'''
    canon, project = _project(tmp_path, "node", RIGHT_JS, extra=writer)
    verdict = measure(tmp_path / "run", canon, project, NODES["node"])
    assert verdict.passed, verdict.summary() + verdict.output


@pytest.mark.slow  # installs typescript from the npm registry
def test_typescript_runs_through_the_projects_own_typescript_where_it_has_no_tsx(tmp_path: Path) -> None:
    packages = tmp_path / "packages"
    packages.mkdir()
    (packages / "package.json").write_text('{"name": "p", "version": "1.0.0", "devDependencies": '
                                           '{"typescript": "5.9.3"}}\n')
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"], cwd=packages,
                   check=True, capture_output=True, timeout=300)
    canon, project = tmp_path / "canon", tmp_path / "code"
    (canon / "tests").mkdir(parents=True)
    (project / "src").mkdir(parents=True)
    (project / "src" / "twice.ts").write_text("export function twice(n: number): number {\n  return n * 2;\n}\n")
    (canon / "tests" / "twice.test.ts").write_text(
        'import { test } from "node:test";\nimport assert from "node:assert/strict";\n'
        'import { twice } from "../src/twice.js";  // TypeScript\'s convention: the .js of the .ts\n\n'
        'test("twice doubles", () => {\n  assert.equal(twice(21), 42);\n});\n')
    verdict = measure(tmp_path / "run", canon, project, ("tests/twice.test.ts",), node_modules=packages / "node_modules")
    assert verdict.passed, verdict.summary() + verdict.output
