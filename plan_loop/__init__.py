"""plan-loop: the judge. Read-only on canon and code; regenerates fix_plan from (V, C) alone and certifies."""
