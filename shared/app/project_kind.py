"""What kind of project `banach init --code` cloned, read from its files: Go (go.mod), TypeScript or JavaScript
(package.json), else Python; and the first canon document and conformance test that fit it, which init writes into
the workspace's drafts/ for the person to finish and land (`spec-loop add`)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SKIPPED = {".git", "node_modules", "vendor", "dist", "build"}


@dataclass(frozen=True)
class ProjectKind:
    language: str  # "python" | "typescript" | "javascript" | "go"
    test_file: str  # the first conformance test's name, as canon names it under tests/
    test_text: str
    paths: str  # the first requirement's write scope

    @property
    def label(self) -> str:
        return {"python": "Python (pytest)", "typescript": "TypeScript (node --test, through the project's tsx)",
                "javascript": "JavaScript (node --test)", "go": "Go (go test)"}[self.language]


def _has(code: Path, suffix: str) -> bool:
    for path in code.rglob(f"*{suffix}"):
        if not SKIPPED & set(path.relative_to(code).parts) and not path.name.endswith(".d.ts"):
            return True
    return False


def _module(code: Path) -> str:
    for line in (code / "go.mod").read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("module "):
            return line.split()[1]
    return "example.com/module"


def detect(code: Path | None) -> ProjectKind:
    if code is not None and (code / "go.mod").is_file():
        return ProjectKind("go", "first_test.go", GO_TEST.replace("MODULE", _module(code)), "**/*.go")
    if code is not None and (code / "package.json").is_file():
        if (code / "tsconfig.json").is_file() or _has(code, ".ts"):
            return ProjectKind("typescript", "first.test.ts", NODE_TEST.replace("FROM", "../src/index.ts"), "src/**")
        return ProjectKind("javascript", "first.test.js", NODE_TEST.replace("FROM", "../src/index.js"), "src/**")
    return ProjectKind("python", "test_first.py", PYTHON_TEST, "**/*.py")


DOCUMENT = """---
area: main
title: What the code must do
---

## MAIN-1: REPLACE: one sentence that must hold
priority: 1
paths: {paths}
tests: tests/{test}

REPLACE: say in prose what must hold, so that an agent can build it and a person can check it. Then make
{test} (beside this file) test exactly that, and land both: spec-loop add main.md {test}
"""

NODE_TEST = """import { test } from "node:test";
import assert from "node:assert/strict";
import { replaceMe } from "FROM";  // REPLACE: what the requirement is about

// Canon's conformance tests run with Node's own test runner, each file in a run of its own; name each top-level test
// in the requirement's `tests:` (tests/first.test.ts::the answer is computed) or the whole file. An expected value
// as the second argument of assert.equal is what Banach's canaries change (docs/canon.md).
test("the answer is computed", () => {
  assert.equal(replaceMe("input"), "the answer");
});
"""

GO_TEST = """package canon

import (
\t"testing"

\t"MODULE" // REPLACE: the package the requirement is about
)

// Canon's Go tests are black-box: this file is built as a package of its own that imports the module's packages.
// `if got != LITERAL { t.Errorf(...) }` is the form Banach's canaries change (docs/canon.md).
func TestTheAnswerIsComputed(t *testing.T) {
\tif got := module.ReplaceMe("input"); got != "the answer" {
\t\tt.Errorf("ReplaceMe(input) = %q", got)
\t}
}
"""

PYTHON_TEST = """from replace_me import replace_me  # REPLACE: what the requirement is about


def test_the_answer_is_computed():
    assert replace_me("input") == "the answer"
"""


def write_drafts(kind: ProjectKind, folder: Path) -> list[Path]:
    """The first document and its conformance test in folder (made), for a person to finish."""
    folder.mkdir(parents=True, exist_ok=True)
    document = folder / "main.md"
    test = folder / kind.test_file
    document.write_text(DOCUMENT.format(paths=kind.paths, test=kind.test_file))
    test.write_text(kind.test_text)
    return [document, test]
