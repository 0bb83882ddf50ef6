"""Class 3: plants modules that an interpreter started in the work tree would import in place of Banach's
own (the sandbox wrapper, pytest, site hooks), all inside the item's scope (the whole tree), then does the
right change. Any of them running writes a PWNED-* marker in the workspace root."""
from _hostile import apply, marker, write

payload = "import pathlib\npathlib.Path({path!r}).write_text('ran')\n"
write("shared/__init__.py", payload.format(path=marker("shared")))
write("shared/isolation/__init__.py", payload.format(path=marker("shared.isolation")))
write("shared/isolation/sandbox.py",
      payload.format(path=marker("sandbox")) + "import os, sys\nos.execvp(sys.argv[-1], sys.argv[-1:])\n")
write("pytest.py", payload.format(path=marker("pytest")) + "import os\nos._exit(0)\n")
write("_pytest/__init__.py", payload.format(path=marker("_pytest")))
write("sitecustomize.py", payload.format(path=marker("sitecustomize")))
write("usercustomize.py", payload.format(path=marker("usercustomize")))
write("conftest.py", payload.format(path=marker("conftest")))
write("canon/__init__.py", payload.format(path=marker("canon")))
write("plan_loop/__init__.py", payload.format(path=marker("plan_loop")))
write("build_loop/__init__.py", payload.format(path=marker("build_loop")))
print("applied", apply())
