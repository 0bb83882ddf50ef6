"""Truncation."""


def truncate(text: str, width: int) -> str:
    """text if it fits in width characters, else its first width - 1 characters and an ellipsis."""
    if width < 1:
        raise ValueError(f"width must be at least 1, not {width}")
    if len(text) <= width:
        return text
    return text[: width - 1] + "…"
