"""Reading a JavaScript, TypeScript or Go test file (shared/measurement/suites.py) and planting its canaries
(suite_canaries.py): the tests found by name, run names everywhere, canaries that change only expected values."""
from __future__ import annotations

import re

from shared.measurement import suites
from shared.measurement.suite_canaries import prepare
from shared.measurement.suites import blocks, defines, runner_of

NODE = r'''import { test, describe, it } from "node:test";
import assert from "node:assert/strict";
import { kebabCase } from "../src/index.ts";

// test("commented out", () => {});
const pattern = /test\("in a regex"\)/g;
test("joins words", () => {
  assert.equal(kebabCase("hello big world"), "hello-big-world");
});
describe(`a group`, () => {
  it("inner", () => { assert.deepStrictEqual(kebabCase("ab cd").split("-"), ["ab", "cd"]); });
});
test.skip('with \'quotes\'', async () => {
  const text = `a ${"b" + `c`} d`;
  assert.equal(kebabCase(text), "a-bc-d");
});
test("an input is never changed", () => {
  assert.ok(kebabCase("Hello World") !== "");
  const cases = [{ input: "A b", expected: "a-b" }];
});
'''

GO = '''package canon

import "testing"

func TestFromRoman(t *testing.T) {
	if got, err := FromRoman("MCMXCIV"); err != nil || got != 1994 {
		t.Errorf("got %d", got)
	}
}

func helper() string { return `raw } brace` }

func TestTable(t *testing.T) {
	cases := []struct{ in, want string }{{in: "XIV", want: "fourteen"}}
	for _, c := range cases {
		if c.in == "never" { // a control-flow literal, not an expected value
			continue
		}
	}
}

func Testlower(t *testing.T) {}
'''


def test_a_file_is_measured_by_the_runner_its_name_says() -> None:
    assert runner_of("tests/test_slug.py") == "pytest"
    assert runner_of("tests/slug.test.ts") == runner_of("tests/a/b.test.mjs") == "node"
    assert runner_of("tests/slug_test.go") == "go"
    assert runner_of("tests/helpers.ts") is runner_of("tests/conftest.py") is None


def test_the_top_level_tests_are_found_by_name_and_nothing_in_strings_comments_or_regexes() -> None:
    assert suites.test_names(NODE, "tests/k.test.ts") == ["joins words", "a group", "with 'quotes'", "an input is never changed"]
    assert suites.test_names(GO, "tests/r_test.go") == ["TestFromRoman", "TestTable"]  # Testlower is no test to go either
    assert defines(NODE, "tests/k.test.ts", "a group") and not defines(NODE, "tests/k.test.ts", "inner")
    assert defines(GO, "tests/r_test.go", "TestTable") and not defines(GO, "tests/r_test.go", "helper")


def test_every_test_runs_under_a_name_of_the_run_and_canaries_change_only_expected_values() -> None:
    suite = prepare(NODE, "tests/k.test.ts", "node", set())
    assert set(suite.names.values()) == {"joins words", "a group", "with 'quotes'", "an input is never changed"}
    run = suites.test_names(suite.source, "tests/k.test.ts")
    assert not {"joins words", "a group"} & set(run)  # canon's names are nowhere a test of the run
    canaries = [node.split("::", 1)[1] for node in suite.planted.nodes]
    assert len(canaries) >= 3 and set(canaries) < set(run) and not set(canaries) & set(suite.names)
    for block in blocks(suite.source, "node"):
        if block.name in canaries:
            text = suite.source[block.start:block.end]
            assert 'kebabCase("hello big world")' in text or 'kebabCase(text)' in text or '"ab cd"' in text \
                or '"A b"' in text, text  # the input is the donor's; only the expected value differs
            assert "hello-big-world" not in text or "a-b" in text or "ab" in text
    donors = set(suite.planted.donors.values())
    assert donors <= {f"tests/k.test.ts::{name}" for name in ("joins words", "a group", "with 'quotes'",
                                                              "an input is never changed")}


def test_go_canaries_change_what_a_failing_check_compares_and_keyed_wants_never_control_flow() -> None:
    suite = prepare(GO, "tests/r_test.go", "go", set())
    found = blocks(suite.source, "go")
    canaries = {node.split("::", 1)[1] for node in suite.planted.nodes}
    assert len(canaries) >= 3
    for block in found:
        if block.name in canaries:
            text = suite.source[block.start:block.end]
            assert '"never"' in text or "TestTable" not in text  # control flow is copied as it is
            assert 'FromRoman("MCMXCIV")' in text or 'in: "XIV"' in text
            assert "got != 1994" not in text or 'want: "fourteen"' in text  # one of the expected values moved
    assert re.search(r"func Test[A-Z][a-z]{9}\(t \*testing.T\)", suite.source)
    assert "func TestFromRoman(" not in suite.source and "func Testlower(" in suite.source


def test_a_file_with_no_expected_value_gets_plain_failing_canaries() -> None:
    source = 'import { test } from "node:test";\ntest("runs", () => {});\n'
    suite = prepare(source, "tests/x.test.js", "node", set())
    assert len(suite.planted.nodes) == 3 and not suite.planted.donors
    assert suite.source.count("throw new Error") == 3
