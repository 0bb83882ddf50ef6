"""Title case."""


def title_case(text: str) -> str:
    """Capitalise every word."""
    return text.title()
