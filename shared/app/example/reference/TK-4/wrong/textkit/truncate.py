"""Truncation."""


def truncate(text: str, width: int) -> str:
    """The first width characters of text, and an ellipsis."""
    return text[:width] + "..."
