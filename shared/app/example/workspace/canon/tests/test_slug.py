from textkit.slug import slugify


def test_lowercases_and_joins_words():
    assert slugify("Hello World") == "hello-world"


def test_collapses_punctuation_runs():
    assert slugify("Fixed point -- in a dumb loop!") == "fixed-point-in-a-dumb-loop"


def test_no_dashes_at_the_ends():
    assert slugify("  ...Banach's theorem...  ") == "banach-s-theorem"


def test_digits_survive():
    assert slugify("Release 2.0") == "release-2-0"
