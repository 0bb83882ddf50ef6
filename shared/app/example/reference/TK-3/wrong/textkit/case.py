"""Title case."""


def title_case(text: str) -> str:
    """Capitalise the title."""
    return text.capitalize()
