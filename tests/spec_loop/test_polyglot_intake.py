"""Canon holds conformance tests in the project's own language: a *.test.ts or *_test.go draft lands in tests/, a
requirement names its tests by the names the file gives them, and one it does not define is refused at its line."""
from __future__ import annotations

from pathlib import Path

from shared.app.init import init_workspace
from tests.helpers.workspaces import cli, set_config

DOC = """## GO-1: Double doubles
paths: double.go
tests: {tests}

Double(n) is 2n.
"""
GO_TEST = """package canon

import "testing"

func TestDoubles(t *testing.T) {
\tif got := 2 * 2; got != 4 {
\t\tt.Errorf("got %d", got)
\t}
}
"""
NODE_TEST = 'import { test } from "node:test";\n\ntest("doubles, with spaces", () => {});\n'


def _add(tmp: Path, files: dict[str, str]) -> tuple[int, str]:
    ws = init_workspace(tmp / "ws", example=False)
    set_config(ws.root, backend="none")
    for name, text in files.items():
        (tmp / name).write_text(text)
    said = cli("spec-loop", "add", *files, "-w", str(ws.root), cwd=tmp, timeout=300)
    return said.returncode, said.stdout + said.stderr


def test_a_go_and_a_node_test_land_in_tests_and_are_named_by_their_tests(tmp_path: Path) -> None:
    tests = "tests/double_test.go::TestDoubles, tests/double.test.ts::doubles with spaces"
    code, said = _add(tmp_path, {"doc.md": DOC.format(tests=tests), "double_test.go": GO_TEST,
                                 "double.test.ts": NODE_TEST.replace("doubles, with spaces", "doubles with spaces")})
    assert code == 0 and "accepted" in said, said
    assert (tmp_path / "ws" / "canon" / "tests" / "double_test.go").is_file()
    assert (tmp_path / "ws" / "canon" / "tests" / "double.test.ts").is_file()


def test_a_test_the_file_does_not_define_is_refused_by_name(tmp_path: Path) -> None:
    code, said = _add(tmp_path, {"doc.md": DOC.format(tests="tests/double_test.go::TestTriples"),
                                 "double_test.go": GO_TEST})
    assert code != 0 and "tests/double_test.go defines no TestTriples" in said, said


def test_a_test_file_no_requirement_names_is_refused(tmp_path: Path) -> None:
    code, said = _add(tmp_path, {"doc.md": DOC.format(tests="tests/double_test.go"), "double_test.go": GO_TEST,
                                 "other.test.js": NODE_TEST})
    assert code != 0 and "other.test.js:1: no requirement names this conformance test" in said, said
