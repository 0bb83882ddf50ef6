"""Try to append to each of a set of files, and report 'ok' or the errno name: run in a child that is
restricted (Landlock) or another account (users backend)."""
from __future__ import annotations

import json

SCRIPT = """
import errno, json, sys
from pathlib import Path
{setup}
out = {{}}
for name, path in json.loads(sys.argv[-1]).items():
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as handle:
            handle.write("x")
        out[name] = "ok"
    except OSError as exc:
        out[name] = errno.errorcode.get(exc.errno, str(exc.errno))
print(json.dumps(out))
"""


def script(setup: str = "") -> str:
    return SCRIPT.format(setup=setup)


def targets_json(targets: dict[str, object]) -> str:
    return json.dumps({name: str(path) for name, path in targets.items()})
