"""python -m textkit slug TEXT | count TEXT"""
import sys

from textkit.count import word_count
from textkit.slug import slugify


def main(argv: list[str]) -> int:
    """Run one textkit command; 2 on bad usage."""
    if len(argv) == 2 and argv[0] == "slug":
        print(slugify(argv[1]))
        return 0
    if len(argv) == 2 and argv[0] == "count":
        print(word_count(argv[1]))
        return 0
    print("usage: python -m textkit slug|count TEXT", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
