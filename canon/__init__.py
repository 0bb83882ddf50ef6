"""Canon: the falsifiable target. Parse, validate, reconcile, and the versioned store.

Read by every role; written only from spec_loop (and enforced by the OS, not by this comment)."""
