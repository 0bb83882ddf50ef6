"""spec-loop: the only writer of canon. Intake from the inbox, edits through $EDITOR, one version per change."""
