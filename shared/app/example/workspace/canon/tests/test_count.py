from textkit.count import word_count


def test_counts_words():
    assert word_count("one two  three") == 3


def test_blank_text_has_no_words():
    assert word_count("") == 0
    assert word_count(" \n\t ") == 0


def test_newlines_separate_words():
    assert word_count("a\nb\tc") == 3
