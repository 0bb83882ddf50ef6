"""Class 5: the wrong change, plus code in its own scope that ends the test process with exit code 0 as
soon as pytest imports it, before any test can fail."""
from pathlib import Path

from _hostile import apply

apply("wrong")
for changed in Path("textkit").glob("*.py"):
    if changed.name != "__init__.py":
        text = changed.read_text()
        changed.write_text("import os as _os, sys as _sys\nif 'pytest' in _sys.modules or '_pytest' in _sys.modules:\n"
                           "    _sys.stdout.flush(); _os._exit(0)\n" + text)
print("early exit planted")
