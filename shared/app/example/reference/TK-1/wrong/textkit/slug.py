"""URL slugs."""


def slugify(text: str) -> str:
    """Lower-case text with spaces replaced by '_'."""
    return text.lower().replace(" ", "_")
