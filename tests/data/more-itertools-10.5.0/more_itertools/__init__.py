"""More routines for operating on iterables, beyond itertools"""

from .recipes import *  # noqa

__version__ = '10.5.0'
