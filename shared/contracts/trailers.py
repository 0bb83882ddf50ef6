"""The trailers build writes on every kept commit and plan and status read back: one spelling for all."""
from __future__ import annotations

ITEM = "Banach-Item"  # the fix_plan item the commit closes
CANON_VERSION = "Canon-Version"  # canon's version the item was measured against (also on canon's own commits)
ITERATION = "Banach-Iteration"  # build's iteration number
