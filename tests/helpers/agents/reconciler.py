"""A reconcile agent: flags EX-1 and TK-1 as contradictory when both are in the proposal."""
import json
import sys

text = sys.stdin.read()
found = []
if "## EX-1:" in text and "## TK-1:" in text:
    found.append({"requirements": ["EX-1", "TK-1"], "reason": "EX-1 wants slugs with underscores, TK-1 with dashes"})
print(json.dumps({"schema_version": 1, "contradictions": found}))
