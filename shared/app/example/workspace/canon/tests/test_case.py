from textkit.case import title_case


def test_capitalises_words():
    assert title_case("fixed point theorem") == "Fixed Point Theorem"


def test_small_words_stay_lower():
    assert title_case("the art of the loop") == "The Art of the Loop"


def test_first_word_always_capitalised():
    assert title_case("a tale and a loop") == "A Tale and a Loop"
