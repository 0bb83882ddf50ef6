"""Property tests on every parser that reads input a person or an agent controls: they refuse, never crash."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plan_loop.agent_oracle import parse_answer
from shared.config import parse_config
from shared.contracts import fix_plan as fix_plan_file
from shared.errors import BanachError, ConfigError, WorkspaceError
from shared.monitor.series import read_series_file

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=12),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=20)
toml_lines = st.lists(st.sampled_from([
    "[build]", "[plan]", "[isolation]", "[agents.x]", "[[build.sensors]]", 'backend = "landlock"', 'backend = "nope"',
    "max_attempts = 3", "max_attempts = -1", 'agent = "x"', 'preset = "claude"', 'preset = "sim"', 'name = "t"',
    'command = "true"', "jobs = 2", "unknown = 1", "[", "x = ", '"', "turn_timeout = 0", "ladder = [\"x\"]",
]), max_size=15)


@settings(max_examples=300, deadline=None)
@given(toml_lines)
def test_config_parser_refuses_or_accepts(lines: list[str]) -> None:
    try:
        parse_config("\n".join(lines), Path("banach.toml"))
    except ConfigError as exc:
        assert str(exc).startswith("banach.toml")


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), json_values.map(json.dumps)))
def test_fix_plan_reader_refuses_or_accepts(text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fix_plan.json"
        path.write_text(text)
        try:
            fix_plan_file.read(path)
        except WorkspaceError as exc:
            assert "plan-loop once" in str(exc)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), json_values.map(json.dumps),
                 st.builds(lambda v: json.dumps({"schema_version": 1, "verdicts": v}), json_values)))
def test_plan_agent_answers_validate_or_are_rejected_with_a_reason(text: str) -> None:
    try:
        answer = parse_answer(text, {"TK-6"})
    except ValueError as exc:
        assert str(exc)
    else:
        assert all(v.requirement == "TK-6" for v in answer.verdicts)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), json_values.map(json.dumps), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))
def test_series_files_are_read_or_refused(text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "series"
        path.write_text(text, encoding="utf-8")
        try:
            values = read_series_file(path)
        except BanachError as exc:
            assert str(path) in str(exc)
        else:
            assert all(v >= 0 for v in values)


def test_a_valid_plan_agent_answer_parses() -> None:
    answer = parse_answer('```json\n{"schema_version": 1, "verdicts": [{"requirement": "TK-6", "holds": true}]}\n```', {"TK-6"})
    assert answer.verdicts[0].holds
    with pytest.raises(ValueError, match="not asked about"):
        parse_answer('{"schema_version": 1, "verdicts": [{"requirement": "TK-9", "holds": true}]}', {"TK-6"})
