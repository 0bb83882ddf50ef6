"""build-loop: one fix_plan item per fresh agent process, behind a governor that decides keep or roll back."""
