"""The tamper scan's reader: one walk over a file's syntax tree that reports the uses the spellings table
(tamper_spellings.py) knows, after naming what each expression stands for (tamper_names.py), so that
`setattr(vars(sys.modules.get("_pytest.reports"))["TestReport"], ...)` is judged as what it names. Writes through
`setattr`, `object.__setattr__`, `type(...).__setattr__`, `vars(...)[...] =` and plain assignment are judged
alike. Where a name is needed and the walk cannot tell it (a value built at run time), that is the hit.

A hit is (line, kind, what, the construct as written): the last, the node's syntax without layout, is what a change
is compared by (tamper_diff.py), so an import is written as the module it names, not as its whole line.
"""
from __future__ import annotations

import ast
import re

from shared.measurement import tamper_spellings as known
from shared.measurement.tamper_names import GLOBALS, Names, local_names, normal, text

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED = re.compile(r"^[A-Za-z_][\w.]*(?::[\w.]+)?$")


def _module_kind(name: str) -> str:
    for prefix, kind in known.MODULE_KINDS.items():
        if name == prefix or name.startswith(prefix + "."):
            return kind
    return ""


class Finder(Names, ast.NodeVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.hits: list[tuple[int, str, str, str]] = []  # (line, kind, what, the construct as written)
        self.callees: set[int] = set()  # ids of nodes that are called where they are written
        self.used: set[int] = set()  # ids of string constants a lookup already judged
        self.prose: set[int] = set()  # ids of docstrings and other bare strings
        self.integers: set[str] = set()  # names the syntax says hold numbers

    def hit(self, node: ast.AST, kind: str, what: str, written: str = "") -> None:
        if not written and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            written = f"def {node.name}"
        elif not written:
            try:
                written = ast.unparse(node)
            except (ValueError, RecursionError):
                written = what
        self.hits.append((getattr(node, "lineno", 1), kind, what, " ".join(written.split())[:300]))

    # what a name is --------------------------------------------------------------------------------------
    def named(self, node: ast.AST, name: str, what: str, written: str = "") -> None:
        """A lookup (an import, getattr, a key of sys.modules or of a namespace) came to `name`."""
        kinds = {_module_kind(name), known.CALL_KINDS.get(name, ""),
                 known.ATTRIBUTE_KINDS.get(name.rsplit(".", 1)[-1], "") if "." in name else "",
                 "modules" if name in known.MUTABLE_SYS and name != "builtins" else "",
                 "exec" if name in known.VALUE_BUILTINS else ""}  # getattr or __import__, itself looked up by name
        for kind in sorted(kinds - {""}):
            self.hit(node, kind, f"{what} (stands for {name})" if name not in what else what, written)

    def assigned(self, node: ast.AST, target: str, bound: bool, what: str) -> None:
        """Something is written to `target` (a dotted name; its owner is "" when unknown)."""
        head, last = target.split(".")[0], target.rsplit(".", 1)[-1]
        if target in known.MUTABLE_SYS or target.startswith(("builtins.", "sys.modules.")):
            self.hit(node, "modules", what)
        elif head in ("_pytest", "pytest", "pluggy", "__main__") and bound:
            self.hit(node, "pytest", what)
        elif last.startswith("pytest_"):
            self.hit(node, "pytest", f"{what} (a pytest hook)")
        elif last in known.ATTRIBUTE_KINDS:
            self.hit(node, known.ATTRIBUTE_KINDS[last], what)
        elif last in known.REPLACING and head not in ("self", "cls"):
            self.hit(node, "modules", f"{what} (replaces code, a class or a namespace)")
        elif bound and head in known.STANDARD_LIBRARY and "." in target:
            self.hit(node, "modules", f"{what} (replaces a standard-library module's attribute)")

    def imported(self, node: ast.AST, module: str) -> None:
        kind = _module_kind(module)
        if kind:
            self.hit(node, kind, f"import {module}", f"import {module}")

    def mentioned(self, node: ast.AST, *, first: bool) -> None:
        """A string where a module is looked up (an argument, a key, the left of `in`) naming one of the runner's."""
        value = text(node)
        if value is None or id(node) in self.used or not _DOTTED.match(value):
            return
        head = value.split(".")[0].split(":")[0]
        kind = known.NAMED_MODULES.get(value.split(":")[0]) or known.NAMED_MODULES.get(head)
        if kind and (first or head not in known.ONLY_FIRST):
            self.used.add(id(node))
            self.hit(node, kind, f"names the module {value!r}")

    # statements ------------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.imported(node, alias.name)
            self.bind(alias.asname or alias.name.split(".")[0], alias.name if alias.asname else alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:  # the project's own modules
            for alias in node.names:
                self.bind(alias.asname or alias.name, "")
            return
        self.imported(node, module)
        for alias in node.names:
            full = normal(f"{module}.{alias.name}")
            self.bind(alias.asname or alias.name, full)
            if not _module_kind(module):
                self.named(node, full, f"from {module} import {alias.name}", written=full)

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant):
            self.prose.add(id(node.value))
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.stored(node.targets, node)
        self.generic_visit(node)
        for target in node.targets:
            self.follow(target, node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.stored([node.target], node)
        self.generic_visit(node)
        if node.value is not None:
            self.follow(node.target, node.value)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.generic_visit(node)
        self.follow(node.target, node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.stored([node.target], node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        self.stored(node.targets, node)
        self.generic_visit(node)

    def stored(self, targets: list[ast.expr], node: ast.AST) -> None:
        for target in targets:
            if isinstance(target, ast.Tuple | ast.List | ast.Starred):
                self.stored(list(target.elts) if not isinstance(target, ast.Starred) else [target.value], node)
            elif isinstance(target, ast.Name):
                if target.id.startswith("pytest_") or target.id == "__builtins__":
                    self.assigned(node, target.id, True, f"assigns {target.id}")
            elif isinstance(target, ast.Attribute) and target.attr not in known.ATTRIBUTE_KINDS:  # else: visit_Attribute
                owner = self.resolve(target.value) or ast.unparse(target.value)
                self.assigned(node, f"{owner}.{target.attr}", self.bound(target), f"assigns {owner or '...'}.{target.attr}")
            elif isinstance(target, ast.Subscript):
                mapping, key = self.resolve(target.value), text(target.slice)
                if mapping in known.MUTABLE_SYS or mapping == "builtins.__dict__":
                    self.hit(node, "modules", f"assigns {mapping}[...]")
                elif key is not None and mapping.endswith(".__dict__"):
                    name = self.entry(mapping, key) if mapping != f"{GLOBALS}.__dict__" else key
                    self.used.add(id(target.slice))
                    self.assigned(node, name, True, f"assigns {ast.unparse(target)[:80]}")

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        """A function's decorators and defaults are evaluated where it is defined; its body in a scope of its own."""
        if not isinstance(node, ast.Lambda):
            if node.name.startswith("pytest_"):
                self.hit(node, "pytest", f"def {node.name} (a pytest hook)")
            for outside in [*node.decorator_list, *filter(None, [node.returns])]:
                self.visit(outside)
        self.visit(node.args)
        self.scopes.append(dict.fromkeys(local_names(node), ""))
        for statement in node.body if isinstance(node.body, list) else [node.body]:
            self.visit(statement)
        self.scopes.pop()
        if not isinstance(node, ast.Lambda):
            self.bind(node.name, "")

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def visit_For(self, node: ast.For | ast.AsyncFor | ast.comprehension) -> None:
        self.walked(node.iter)
        if isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Call) and self.resolve(node.iter.func) == "range":
            self.integers.add(node.target.id)  # for fd in range(3, 256): open(fd, "w")
        self.generic_visit(node)

    visit_AsyncFor = visit_comprehension = visit_For

    def integer(self, node: ast.AST) -> bool:
        """Whether the syntax says the value is a number: a constant, a range's counter, int(...), arithmetic on them."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, int) and not isinstance(node.value, bool)
        if isinstance(node, ast.Name):
            return node.id in self.integers
        if isinstance(node, ast.Call):
            return self.resolve(node.func) in ("int", "len", "os.open", "os.dup")
        return isinstance(node, ast.BinOp) and (self.integer(node.left) or self.integer(node.right))

    def walked(self, node: ast.AST) -> None:
        if self.resolve(node) == "sys.modules":
            self.hit(node, "modules", f"walks sys.modules ({ast.unparse(node)[:60]})")

    # expressions -----------------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        self.callees.add(id(node.func))
        name, args = self.resolve(node.func), node.args
        kind = known.CALL_KINDS.get(name) or next((kind for prefix, kind in known.CALL_PREFIXES.items()
                                                   if name.startswith(prefix)), "")
        if kind:
            self.hit(node, kind, f"{name}()")
        if name in known.STRING_CALLS and not (args and isinstance(args[0], ast.Constant)):
            self.hit(node, "exec", f"{name}() of a value built at run time")
        returned = self.returned(node)
        if returned and (name in known.IMPORTERS or name in known.GETTERS or not isinstance(node.func, ast.Name)):
            self.used.update(id(arg) for arg in [*args[:2], *getattr(node.func, "args", [])[:2]])
            self.named(node, returned, " ".join(ast.unparse(node).split())[:80])
        elif name in known.IMPORTERS and args and text(args[0]):
            self.imported(node, text(args[0]) or "")
        if name in known.GETTERS and len(args) >= 2 and text(args[1]) is None:
            owner = self.resolve(args[0])
            if owner.split(".")[0] in known.SENSITIVE_OWNERS:
                self.hit(node, "exec", f"getattr({owner}, ...) of a name built at run time")
        self.setter(node, name)
        self.mutated(node)
        self.looked_up(node)
        if name in known.WALKERS and any(self.resolve(arg) == "sys.modules" for arg in args):
            self.hit(node, "modules", f"walks sys.modules ({name}())")
        if name in ("open", "io.open", "io.FileIO") and args and self.integer(args[0]):
            self.hit(node, "descriptors", f"{name}() of a descriptor number")
        for keyword in node.keywords:
            if keyword.arg in ("closefd", "fileno", "pass_fds"):
                self.hit(node, "descriptors", f"{name or '...'}({keyword.arg}=...)")
            elif keyword.arg == "specname":
                self.hit(node, "pytest", f"{name or '...'}(specname=...) (names a pytest hook)")
        for index, arg in enumerate(args):
            self.mentioned(arg, first=index == 0)
            self.path_part(arg)
        for keyword in node.keywords:
            self.mentioned(keyword.value, first=False)
        self.generic_visit(node)

    def setter(self, node: ast.Call, name: str) -> None:
        """setattr(owner, "name", value) and its spellings: object.__setattr__, type(x).__setattr__(owner, ...),
        owner.__setattr__("name", value), operator.methodcaller("__setattr__", "name", value)(owner)."""
        args: list[ast.expr] = list(node.args)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("__setattr__", "__delattr__") \
                and name not in known.SETTERS:
            receiver = node.func.value
            is_type = (isinstance(receiver, ast.Call) and self.resolve(receiver.func) == "type") or \
                self.resolve(receiver) in ("type", "object")
            args = args if is_type else [receiver, *args]
            name = "setattr" if node.func.attr == "__setattr__" else "delattr"
        elif isinstance(node.func, ast.Call) and self.resolve(node.func.func) == "operator.methodcaller" \
                and text(node.func.args[0] if node.func.args else None) in ("__setattr__", "__delattr__"):
            args = [*node.args[:1], *node.func.args[1:]]
            name = "setattr"
        elif name not in known.SETTERS:
            return
        if len(args) < 2:
            return
        owner, key = self.resolve(args[0]), text(args[1])
        if key is None:
            if owner.split(".")[0] in known.SENSITIVE_OWNERS or owner.startswith(("_pytest", "pytest")):
                self.hit(node, "modules", f"setattr({owner}, ...) of a name built at run time")
            return
        self.used.add(id(args[1]))
        self.assigned(node, f"{owner}.{key}", self.bound(args[0]), " ".join(ast.unparse(node).split())[:80])

    def looked_up(self, node: ast.Call) -> None:
        """sys.modules.get(name) and methodcaller("get", name)(sys.modules), with a name built at run time."""
        func, args = node.func, node.args
        if isinstance(func, ast.Attribute) and func.attr in ("get", "pop", "setdefault", "__getitem__"):
            table, key = self.resolve(func.value), args[0] if args else None
        elif isinstance(func, ast.Call) and self.resolve(func.func) == "operator.methodcaller" and args \
                and text(func.args[0] if func.args else None) in ("get", "pop", "setdefault", "__getitem__"):
            table, key = self.resolve(args[0]), func.args[1] if len(func.args) > 1 else None
        else:
            return
        if table == "sys.modules" and key is not None and text(key) is None and not self._own_module(key):
            self.hit(node, "modules", "sys.modules looked up by a name built at run time")

    def mutated(self, node: ast.Call) -> None:
        """sys.modules.pop(...), sys.meta_path.insert(...), vars(json).update(...), methodcaller("pop", ...)(...)."""
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in known.MUTATORS | known.WALKS:
            target = self.resolve(func.value)
            owner = target[:-len(".__dict__")] if target.endswith(".__dict__") else ""
            if func.attr in known.WALKS:
                if target == "sys.modules":
                    self.hit(node, "modules", f"walks sys.modules (.{func.attr}())")
            elif target in known.MUTABLE_SYS or owner.split(".")[0] in known.STANDARD_LIBRARY | {"builtins"}:
                self.hit(node, "modules", f"{target}.{func.attr}()")
        elif isinstance(func, ast.Call) and self.resolve(func.func) == "operator.methodcaller" and node.args:
            method = text(func.args[0] if func.args else None)
            if method in known.MUTATORS and self.resolve(node.args[0]) in known.MUTABLE_SYS:
                self.hit(node, "modules", f"{self.resolve(node.args[0])}.{method}() through operator.methodcaller")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in known.ATTRIBUTE_KINDS:
            self.hit(node, known.ATTRIBUTE_KINDS[node.attr], f".{node.attr}")
        if node.attr in known.TYPE_SLOTS and isinstance(node.value, ast.Call) and not node.value.args[1:] \
                and self.resolve(node.value.func) == "type":
            self.hit(node, "gc" if node.attr == "__subclasses__" else "modules", f"type(...).{node.attr}")
        if id(node) not in self.callees and isinstance(node.ctx, ast.Load):
            name = self.resolve(node)
            if name in known.CALL_KINDS:  # os._exit handed on as a value: called elsewhere, by whatever takes it
                self.hit(node, known.CALL_KINDS[name], f"{name} (as a value)")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and id(node) not in self.callees and node.id in known.VALUE_BUILTINS \
                and self.lookup(node.id) is None:
            self.hit(node, "exec", f"{node.id} taken as a value (what it is called with is hidden)")

    def visit_Subscript(self, node: ast.Subscript) -> None:
        mapping, key = self.resolve(node.value), text(node.slice)
        if isinstance(node.ctx, ast.Load) and key is not None and mapping:
            name = self.entry(mapping, key)
            if name:
                self.used.add(id(node.slice))
                self.named(node, name, " ".join(ast.unparse(node).split())[:80])
        elif mapping == "sys.modules" and isinstance(node.ctx, ast.Load) and not self._own_module(node.slice):
            self.hit(node, "modules", "sys.modules[...] of a name built at run time")
        self.mentioned(node.slice, first=True)
        self.generic_visit(node)

    def _own_module(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in known.OWN_MODULE
        return isinstance(node, ast.Attribute) and (node.attr in known.OWN_MODULE or ast.unparse(node).endswith("__spec__.name"))

    def path_part(self, node: ast.AST) -> None:
        """Path("/", "proc", ...), "/" + "proc", root / "proc": /proc spelled in parts."""
        if text(node) == "proc":
            self.hit(node, "proc", "'proc', a part of a path")

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.Div | ast.Add):
            self.path_part(node.left)
            self.path_part(node.right)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        if any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            self.mentioned(node.left, first=True)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str | bytes) or id(node) in self.prose:
            return
        value = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
        if "/proc/" in value or "/dev/fd" in value or value.rstrip("/") == "/proc":
            self.hit(node, "proc", repr(value[:60]))
        if id(node) in self.used:
            return
        for word in sorted(set(_WORD.findall(value))):
            kind = known.WORDS.get(word) or next((kind for prefix, kind in known.WORD_PREFIXES.items()
                                                  if word.startswith(prefix) and len(word) > len(prefix)), "")
            if kind:
                self.hit(node, kind, f"{value[:60]!r} names {word}")
