"""python -m textkit slug | count, the text on stdin"""
import sys

from textkit.count import word_count
from textkit.slug import slugify

text = sys.stdin.read()
if sys.argv[1] == "slug":
    print(slugify(text))
else:
    print(word_count(text))
