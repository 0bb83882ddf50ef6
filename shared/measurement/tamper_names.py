"""What an expression stands for, where the syntax says so: the tamper scan's naming (tamper_finder.py reports).

Naming is what makes an equivalent spelling the same spelling. Imports and plain assignments are followed
(`r = sys.modules.get("_pytest.reports")` makes `r` stand for `_pytest.reports`), and so are the ways to look a
name up without writing it: `getattr`, `vars(...)[...]`, `.__dict__[...]`, `globals()[...]`, `__builtins__`,
`operator.attrgetter`/`itemgetter`/`methodcaller`, `type(...).__getattribute__`, `__import__`, `import_module`,
`pkgutil.resolve_name`. Names are scoped as Python scopes them, so a function's own `t` is not the module's
`import typing as t`; a module-level import is never forgotten by a later assignment the walk cannot name.
"""
from __future__ import annotations

import ast

from shared.measurement import tamper_spellings as known

GLOBALS = "<globals>"  # what globals(), vars() and locals() stand for: this file's own names
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def text(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def normal(name: str) -> str:
    """One spelling per thing: posix._exit is os._exit, importlib.sys.modules is sys.modules, builtins.getattr is
    getattr."""
    if not name:
        return ""
    parts = name.split(".")
    parts[0] = known.SAME_MODULE.get(parts[0], parts[0])
    if "sys" in parts[1:] and parts[0] in known.STANDARD_LIBRARY:
        parts = parts[parts.index("sys", 1):]
    if parts[0] == "builtins" and len(parts) == 2 and parts[1] in known.BUILTIN_NAMES:
        return parts[1]
    return ".".join(parts)


def local_names(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """The names a function binds for itself: its parameters and what its body assigns, imports or defines (not
    inside nested functions or classes, and not what it declares global or nonlocal)."""
    arguments = function.args
    names = {arg.arg for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                 *filter(None, [arguments.vararg, arguments.kwarg])]}
    declared: set[str] = set()
    pending: list[ast.AST] = list(function.body) if isinstance(function.body, list) else [function.body]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            declared.update(node.names)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        if isinstance(node, _SCOPES):
            if not isinstance(node, ast.Lambda):
                names.add(node.name)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return names - declared


class Names:
    """Scopes of what local names stand for, innermost last: "" is a function's own value, which the walk cannot
    name."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, str]] = [{"__builtins__": "builtins"}]

    def lookup(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def bind(self, name: str, meaning: str) -> None:
        self.scopes[-1][name] = meaning

    def resolve(self, node: ast.AST) -> str:
        """What the expression stands for, as a dotted name ("" when the syntax does not say)."""
        if isinstance(node, ast.Name):
            meaning = self.lookup(node.id)
            return normal(node.id if meaning is None else meaning)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return normal(f"{base}.{node.attr}") if base else ""
        if isinstance(node, ast.Subscript):
            key = text(node.slice)
            return self.entry(self.resolve(node.value), key) if key is not None else ""
        if isinstance(node, ast.Call):
            return self.returned(node)
        if isinstance(node, ast.NamedExpr):
            return self.resolve(node.value)
        if isinstance(node, ast.IfExp):  # m = a if test else b: either may be what it is
            return self.resolve(node.body) or self.resolve(node.orelse)
        if isinstance(node, ast.BoolOp):
            return next(filter(None, map(self.resolve, node.values)), "")
        return ""

    def entry(self, mapping: str, key: str) -> str:
        """What mapping[key] stands for: a module of sys.modules, or a name of a namespace."""
        if mapping == "sys.modules":
            return normal(key.replace(":", "."))
        if mapping == f"{GLOBALS}.__dict__":
            meaning = self.scopes[0].get(key)
            return normal(meaning or key)
        if mapping.endswith(".__dict__"):
            return normal(f"{mapping[:-len('.__dict__')]}.{key}")
        if mapping == "builtins":  # outside __main__, __builtins__ is a dict
            return normal(f"builtins.{key}")
        return ""

    def returned(self, node: ast.Call) -> str:
        """What a call returns, where it is a lookup by name."""
        name, args = self.resolve(node.func), node.args
        first, second = (text(args[0]) if args else None), (text(args[1]) if len(args) > 1 else None)
        if name in known.IMPORTERS and first:
            package = second or text(next((k.value for k in node.keywords if k.arg == "package"), None))
            module = f"{package}.{first.lstrip('.')}" if first.startswith(".") and package else first.replace(":", ".")
            return normal(module.split(".")[0] if name == "__import__" and len(args) < 4 else module)
        if name in known.GETTERS and second is not None:
            owner = self.resolve(args[0])
            return normal(f"{owner}.{second}") if owner else ""
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("__getattribute__", "__getattr__"):
            owner_node, key = (node.func.value, first) if len(args) == 1 else (args[0] if args else None, second)
            owner = self.resolve(owner_node) if owner_node is not None else ""
            return normal(f"{owner}.{key}") if owner and key is not None else ""
        if name == "vars" and args:
            owner = self.resolve(args[0])
            return f"{owner}.__dict__" if owner else ""
        if name in ("vars", "globals", "locals") and not args:
            return f"{GLOBALS}.__dict__"
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "setdefault", "pop") and first is not None:
            return self.entry(self.resolve(node.func.value), first)
        if isinstance(node.func, ast.Call) and node.func.args and args:  # operator.attrgetter("x")(owner)
            maker, made = self.resolve(node.func.func), [text(arg) for arg in node.func.args]
            owner = self.resolve(args[0])
            if maker == "operator.attrgetter" and made[0] and owner:
                return normal(f"{owner}.{made[0]}")
            if maker == "operator.itemgetter" and made[0] is not None:
                return self.entry(owner, made[0])
            if maker == "operator.methodcaller" and made[0] in ("get", "setdefault", "pop") and len(made) > 1 \
                    and made[1] is not None:
                return self.entry(owner, made[1])
        return ""

    def bound(self, node: ast.AST) -> bool:
        """Whether the expression's head is something the file imported or looked up (not a value of its own)."""
        while isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        return not isinstance(node, ast.Name) or bool(self.lookup(node.id))

    def follow(self, target: ast.AST, value: ast.AST) -> None:
        """x = <something the syntax names>: x stands for it from here on, in x's scope."""
        if isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List) \
                and len(target.elts) == len(value.elts):
            for one, other in zip(target.elts, value.elts, strict=True):
                self.follow(one, other)
        elif isinstance(target, ast.Name):
            name = self.resolve(value)
            if name and not isinstance(value, ast.Constant):
                self.bind(target.id, name)
