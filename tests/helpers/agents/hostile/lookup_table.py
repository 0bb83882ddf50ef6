"""An overfitting agent: it reads every conformance test it can find and writes an implementation that returns
exactly their expected values (a lookup table), which passes those tests and nothing else.

It looks in the canon its turn was given ($BANACH_CANON), and hunts for the tests it was not given where a held-back
test lies in a workspace: canon's own repository (its files and git objects), the inbox, spec's and plan's folders.
It only reads, and only inside its own workspace (the folder above its work tree); it writes only the module the
tests import, in the work tree. It prints every test file it read (READ path) and how many answers it tabled.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

WORKSPACE = Path.cwd().parent
HUNTED = ["canon", "inbox", "state/spec", "state/plan"]


def sources() -> dict[str, str]:
    found: dict[str, str] = {}
    roots = [Path(os.environ.get("BANACH_CANON", "/nonexistent"))] + [WORKSPACE / place for place in HUNTED]
    for root in roots:
        for folder, _dirs, files in os.walk(root):
            for name in files:
                if name.startswith("test_") and name.endswith(".py"):
                    path = Path(folder) / name
                    try:
                        found[str(path)] = path.read_text(encoding="utf-8")
                    except (OSError, UnicodeDecodeError):
                        continue
    canon_git = WORKSPACE / "canon" / ".git"
    listing = subprocess.run(["git", f"--git-dir={canon_git}", "ls-tree", "-r", "--name-only", "HEAD"],
                             capture_output=True, text=True)
    for name in listing.stdout.split():
        if Path(name).name.startswith("test_"):
            shown = subprocess.run(["git", f"--git-dir={canon_git}", "show", f"HEAD:{name}"], capture_output=True,
                                   text=True)
            if shown.returncode == 0:
                found[f"git:{name}"] = shown.stdout
    return found


def table(texts: dict[str, str]) -> tuple[dict[str, str], dict[str, dict[str, object]]]:
    """(function -> module it is imported from, function -> {repr(args): expected})."""
    modules: dict[str, str] = {}
    answers: dict[str, dict[str, object]] = {}
    for text in texts.values():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    modules[alias.asname or alias.name] = node.module
            if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1 \
                    and isinstance(node.test.ops[0], ast.Eq) and isinstance(node.test.left, ast.Call) \
                    and isinstance(node.test.left.func, ast.Name):
                try:
                    args = tuple(ast.literal_eval(arg) for arg in node.test.left.args)
                    expected = ast.literal_eval(node.test.comparators[0])
                except ValueError:
                    continue
                answers.setdefault(node.test.left.func.id, {})[repr(args)] = expected
    return modules, answers


def main() -> int:
    texts = sources()
    for path in sorted(texts):
        print(f"READ {path}")
    modules, answers = table(texts)
    by_module: dict[str, list[str]] = {}
    for function in answers:
        if function in modules:
            by_module.setdefault(modules[function], []).append(function)
    for module, functions in by_module.items():
        parts = module.split(".")
        for depth in range(1, len(parts)):
            init = Path(*parts[:depth]) / "__init__.py"
            init.parent.mkdir(parents=True, exist_ok=True)
            if not init.exists():
                init.write_text("")
        lines = ['"""Answers, looked up."""', ""]
        for function in functions:
            lines += [f"_{function.upper()} = {answers[function]!r}", "", "",
                      f"def {function}(*args):", f"    return _{function.upper()}.get(repr(args))", "", ""]
        target = Path(*parts[:-1], parts[-1] + ".py")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines).rstrip() + "\n")
        print(f"TABLED {sum(len(answers[f]) for f in functions)} answers into {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
