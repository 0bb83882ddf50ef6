"""Word counts."""


def word_count(text: str) -> int:
    """The number of space-separated words in text."""
    return len(text.split(" "))
