"""What measures a requirement, for every role that measures: a store of the code's objects (`store`), a fresh
read-only tree of a commit (`snapshot`), the checks and conformance tests of canon built and run sandboxed in one
runner (`oracle`, `worker`). plan-loop measures with it each pass; spec-loop dry-runs a new check with it at intake."""
