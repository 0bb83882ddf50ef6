"""A plan agent that reads the prompt and answers with valid JSON: TK-6 does not hold."""
import json
import re
import sys

prompt = sys.stdin.read()
asked = re.findall(r"^- ([A-Z][A-Z0-9]*-\d+):", prompt, re.M)
print(json.dumps({"schema_version": 1, "verdicts": [
    {"requirement": rid, "holds": False, "evidence": f"{rid}: textkit/__init__.py has functions with no docstring"}
    for rid in asked]}))
