"""URL slugs."""
import re


def slugify(text: str) -> str:
    """Lower-case text with every run of non-alphanumerics replaced by one '-', trimmed."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
