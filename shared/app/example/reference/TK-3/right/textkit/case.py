"""Title case."""

SMALL_WORDS = {"a", "an", "the", "of", "and"}


def title_case(text: str) -> str:
    """Capitalise every word except small words that are not first."""
    words = text.split()
    return " ".join(
        word.lower() if index and word.lower() in SMALL_WORDS else word.capitalize()
        for index, word in enumerate(words)
    )
