"""python -m textkit slug TEXT | count TEXT"""
import sys

from textkit.count import word_count
from textkit.slug import slugify

if sys.argv[1] == "slug":
    print(slugify(sys.argv[2]))
else:
    print(word_count(sys.argv[2]))
