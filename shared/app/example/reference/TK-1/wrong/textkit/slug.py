"""URL slugs."""


def slugify(text: str) -> str:
    """Lower-case text with spaces replaced by '-'."""
    return text.lower().replace(" ", "-")
