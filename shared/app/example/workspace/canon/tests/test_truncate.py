import pytest

from textkit.truncate import truncate


def test_short_text_is_unchanged():
    assert truncate("loop", 4) == "loop"


def test_long_text_gets_an_ellipsis():
    assert truncate("contraction", 5) == "cont…"
    assert len(truncate("contraction", 5)) == 5


def test_width_below_one_is_an_error():
    with pytest.raises(ValueError):
        truncate("x", 0)
