"""The tamper scan: what code under test has no business doing, found in its syntax (never by running it).

Code that runs inside the test process can reach the measurement itself: walk the garbage collector to the
runner's reporter, open /proc/self/fd, exit before pytest finishes, patch pytest's hooks or sys.modules, trace
frames up to the runner's locals. The report channel, the finish rule and the canaries (shared/conformance.py)
make each of those fail or void the run; this scan names them where they are written, so that a kept turn or a
certificate never rests on code that tried. It is a tripwire, not a proof: code built to hide (strings assembled
at run time, a C extension) can pass it, and SECURITY.md says so.

    hits = scan({"pkg/mod.py": b"..."})         # every hit, with file, line and what it does
    blocking = unallowed(hits, canon)           # the hits no requirement owning that file allows

A requirement allows a kind in canon (`allows: exit, modules`); the allowance covers the files its `paths:` match.
"""
from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # canon's model names these kinds (canon/model.py imports KINDS from here)
    from canon.model import Canon
    from shared.git import GitRepo

PYTHON_SUFFIXES = (".py", ".pyw", ".pth")
MAX_BYTES = 2_000_000  # a larger Python file is a hit in itself: code under test has no need of one
KINDS = {
    "gc": "walks the garbage collector, where the test runner's own objects are",
    "proc": "names /proc or /dev/fd, where the process's descriptors and memory are",
    "descriptors": "writes to or opens raw file descriptors",
    "exit": "ends or signals the process outside the test's control",
    "modules": "replaces modules, import hooks or builtins",
    "pytest": "reaches pytest's internals or hooks",
    "frames": "reads or traces other code's frames",
    "exec": "runs code built from strings",
    "rename": "renames or replaces files",
    "fifo": "makes FIFOs or device nodes",
    "ctypes": "calls into C, where anything in the process can be patched",
    "unreadable": "could not be read as Python",
}
_MODULE_KINDS = {"gc": "gc", "ctypes": "ctypes", "cffi": "ctypes", "_pytest": "pytest", "pluggy": "pytest",
                 "atexit": "exit", "importlib.abc": "modules", "sys.monitoring": "frames"}
_CALL_KINDS = {
    "os._exit": "exit", "os.abort": "exit", "os.kill": "exit", "os.killpg": "exit", "signal.raise_signal": "exit",
    "signal.pthread_kill": "exit", "os.fdopen": "descriptors", "os.write": "descriptors", "os.dup": "descriptors",
    "os.dup2": "descriptors", "os.rename": "rename", "os.renames": "rename", "os.replace": "rename",
    "shutil.move": "rename", "os.mkfifo": "fifo", "os.mknod": "fifo", "sys.settrace": "frames",
    "sys.setprofile": "frames", "threading.settrace": "frames", "threading.setprofile": "frames",
    "sys._getframe": "frames", "inspect.currentframe": "frames", "inspect.stack": "frames",
    "inspect.getouterframes": "frames", "importlib.reload": "modules",
}
_ATTRIBUTE_KINDS = {"f_back": "frames", "f_locals": "frames", "f_globals": "frames", "tb_frame": "frames",
                    "pluginmanager": "pytest", "ihook": "pytest", "call_and_report": "pytest",
                    "pytest_runtest_logreport": "pytest"}
_MUTABLE_SYS = {"sys.modules", "sys.meta_path", "sys.path_hooks", "builtins", "__builtins__"}
_MUTATORS = {"pop", "update", "setdefault", "clear", "__setitem__", "__delitem__", "insert", "append", "extend",
             "remove", "popitem"}
_STRING_CALLS = {"exec", "eval", "compile", "__import__", "importlib.import_module"}


@dataclass(frozen=True)
class Hit:
    path: str
    line: int
    kind: str
    what: str  # the construct, as written

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what} ({KINDS[self.kind]})"


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


class _Finder(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.hits: list[Hit] = []
        self.aliases: dict[str, str] = {}  # local name -> the module or function it stands for

    def hit(self, node: ast.AST, kind: str, what: str) -> None:
        self.hits.append(Hit(self.path, getattr(node, "lineno", 1), kind, what))

    def full(self, node: ast.AST) -> str:
        name = _dotted(node)
        head, _, rest = name.partition(".")
        resolved = self.aliases.get(head, head)
        return f"{resolved}.{rest}" if rest else resolved

    def imported(self, node: ast.AST, module: str) -> None:
        for prefix, kind in _MODULE_KINDS.items():
            if module == prefix or module.startswith(prefix + "."):
                self.hit(node, kind, f"import {module}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.imported(node, alias.name)
            self.aliases[(alias.asname or alias.name).split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self.imported(node, module)
        for alias in node.names:
            self.imported(node, f"{module}.{alias.name}")
            self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
            called = _CALL_KINDS.get(f"{module}.{alias.name}")
            if called:
                self.hit(node, called, f"from {module} import {alias.name}")

    def visit_Call(self, node: ast.Call) -> None:
        name = self.full(node.func)
        if name in _CALL_KINDS:
            self.hit(node, _CALL_KINDS[name], f"{name}()")
        if name in _STRING_CALLS and not (node.args and isinstance(node.args[0], ast.Constant)):
            self.hit(node, "exec", f"{name}() of a value built at run time")
        elif name in ("__import__", "importlib.import_module") and node.args:
            self.imported(node, str(getattr(node.args[0], "value", "")))
        elif name == "getattr" and len(node.args) >= 2:
            self._looked_up(node, self.full(node.args[0]), node.args[1])
        elif name == "open" and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, int):
            self.hit(node, "descriptors", f"open({node.args[0].value})")
        if isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            target = self.full(node.func.value)
            if target in _MUTABLE_SYS:
                self.hit(node, "modules", f"{target}.{node.func.attr}()")
        self.generic_visit(node)

    def _looked_up(self, node: ast.Call, owner: str, attribute: ast.expr) -> None:
        """getattr(os, "_exit") is os._exit; getattr(os, name) on a module that has such functions hides which one."""
        if isinstance(attribute, ast.Constant) and isinstance(attribute.value, str):
            name = attribute.value
            called = _CALL_KINDS.get(f"{owner}.{name}") or _ATTRIBUTE_KINDS.get(name) or next(
                (kind for call, kind in _CALL_KINDS.items() if not owner and call.endswith(f".{name}")), None)
            if called:
                self.hit(node, called, f"getattr({owner or '...'}, {name!r})")
        elif owner.split(".")[0] in ("os", "sys", "gc", "builtins", "_pytest", "importlib", "signal", "inspect"):
            self.hit(node, "exec", f"getattr({owner}, ...) of a name built at run time")

    def _stored(self, targets: list[ast.expr], node: ast.AST) -> None:
        for target in targets:
            name = self.full(target.value if isinstance(target, ast.Subscript) else target)
            if name in _MUTABLE_SYS or name.startswith(("builtins.", "sys.modules.")):
                self.hit(node, "modules", f"assigns {name}")
            elif name.startswith(("_pytest.", "pytest.")):
                self.hit(node, "pytest", f"assigns {name}")

    def visit_Assign(self, node: ast.Assign) -> None:
        self._stored(node.targets, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._stored([node.target], node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        self._stored(node.targets, node)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _ATTRIBUTE_KINDS:
            self.hit(node, _ATTRIBUTE_KINDS[node.attr], f".{node.attr}")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name.startswith("pytest_"):
            self.hit(node, "pytest", f"def {node.name} (a pytest hook)")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str | bytes):
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            if "/proc/" in text or "/dev/fd" in text or text.rstrip("/") == "/proc":
                self.hit(node, "proc", repr(text[:60]))


def scan(files: Mapping[str, bytes]) -> list[Hit]:
    """Every hit in the Python files among `files` (path -> content); other files are not read."""
    hits: list[Hit] = []
    for path, content in sorted(files.items()):
        if not path.endswith(PYTHON_SUFFIXES):
            continue
        if path.endswith(".pth"):
            hits.append(Hit(path, 1, "modules", "a .pth file (site runs its import lines at start-up)"))
            continue
        if len(content) > MAX_BYTES:
            hits.append(Hit(path, 1, "unreadable", f"{len(content)} bytes, over the scan's {MAX_BYTES}"))
            continue
        try:
            tree = ast.parse(content, filename=path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # what does not parse cannot be imported either: its tests fail on their own
        finder = _Finder(path)
        try:
            finder.visit(tree)
        except RecursionError:
            finder.hit(tree, "unreadable", "nested too deeply to scan")
        hits.extend(finder.hits)
    return sorted(set(hits), key=lambda h: (h.path, h.line, h.kind, h.what))


def scan_blobs(repo: GitRepo, blobs: Mapping[str, str]) -> list[Hit]:
    """scan() of these files of a repository (path -> blob id), reading only the Python ones, in one git call."""
    python = {path: blob for path, blob in blobs.items() if path.endswith(PYTHON_SUFFIXES)}
    contents = repo.blobs(sorted(set(python.values())))
    return scan({path: contents[blob] for path, blob in python.items() if blob in contents})


def unallowed(hits: list[Hit], canon: Canon, requirements: tuple[str, ...] | None = None) -> list[Hit]:
    """The hits that no requirement owning the file (its `paths:` match) allows; `requirements` narrows the owners
    to those (an item's), None means any requirement of canon."""
    from canon.scope import matches

    owners = [canon.requirements[rid] for rid in (requirements or tuple(canon.requirements)) if rid in canon.requirements]
    return [hit for hit in hits
            if not any(hit.kind in req.allows and matches(hit.path, req.paths) for req in owners)]
