"""DESIGN's seams as a check: the loops meet only through files, so their packages never import each other, and
neither shared nor canon reaches up into a loop. Inside shared/ the library at the top is the ground floor:
isolation, the monitor and the `banach` application are built on it, and it never imports them. Function-level
imports count too."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOOPS = {"spec_loop", "plan_loop", "build_loop"}
APP, MONITOR, ISOLATION = "shared.app", "shared.monitor", "shared.isolation"
# layer: what no module of it may import (a package name forbids the package and everything under it)
FORBIDDEN = {
    "spec_loop": LOOPS - {"spec_loop"},
    "plan_loop": LOOPS - {"plan_loop"},
    "build_loop": LOOPS - {"build_loop"},
    "canon": LOOPS,
    "shared (library)": {*LOOPS, APP, MONITOR},
    "shared.contracts": {*LOOPS, APP, MONITOR},
    "shared.checks": {*LOOPS, APP, MONITOR},
    "shared.environment": {*LOOPS, APP, MONITOR},  # the project's environment: read and built for every role
    "shared.measurement": {*LOOPS, APP, MONITOR},  # what decides a verdict: runner, channel, canaries, judging, the scan
    ISOLATION: {*LOOPS, APP, MONITOR},
    MONITOR: {*LOOPS, APP, ISOLATION},
    APP: LOOPS,  # the application starts the loops as programs, by name, and never imports them
    "shared.dashboard": LOOPS,  # it reads the stores and asks the loops' executables to act
}
ENTRY_POINT = ROOT / "shared" / "__main__.py"  # `python -m shared` is the banach command: it imports shared.app


def layer(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[0] != "shared":
        return parts[0]
    if len(parts) == 2 or parts[1] == "__init__":  # a module at the top of shared/
        return "shared (library)"
    return f"shared.{parts[1]}"


def imported_modules(source: str, package: tuple[str, ...]) -> set[tuple[str, int]]:
    """Every module a file of `package` imports, as a dotted name: `from shared import supervisor` is
    shared.supervisor, and a relative import is resolved against the package."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {(alias.name, node.lineno) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join([*package[:len(package) - node.level + 1], *([node.module] if node.module else [])]
                            if node.level else [node.module or ""])
            found |= {(f"{base}.{alias.name}", node.lineno) for alias in node.names}
    return found


def imports_of(path: Path) -> set[tuple[str, int]]:
    return imported_modules(path.read_text(), path.relative_to(ROOT).with_suffix("").parts[:-1])


def crosses(name: str, forbidden: set[str]) -> bool:
    return any(name == package or name.startswith(package + ".") for package in forbidden)


def product_files() -> list[Path]:
    return sorted(path for package in ("spec_loop", "plan_loop", "build_loop", "canon", "shared")
                  for path in (ROOT / package).rglob("*.py") if "example" not in path.parts and path != ENTRY_POINT)


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_package_imports_across_a_seam(package: str) -> None:
    files = [path for path in product_files() if layer(path) == package]
    assert files, f"no module belongs to {package}: the layout changed, so change this test with it"
    violations = [f"{path.relative_to(ROOT)}:{line} imports {name}"
                  for path in files for name, line in sorted(imports_of(path)) if crosses(name, FORBIDDEN[package])]
    assert not violations, "\n".join(violations)


def test_every_package_of_shared_is_a_named_layer() -> None:
    """A new sub-package of shared/ must say where it stands before it can pass unchecked."""
    unknown = {layer(path) for path in product_files()} - set(FORBIDDEN)
    assert not unknown, f"give these a row in FORBIDDEN: {sorted(unknown)}"


def test_contracts_depend_on_the_library_alone() -> None:
    allowed_shared = {"shared.atomic", "shared.errors", "shared.journal", "shared.contracts"}
    for path in sorted((ROOT / "shared" / "contracts").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(("shared", "canon")):
                assert any(node.module.startswith(ok) for ok in allowed_shared), f"{path.name} imports {node.module}"


def test_the_walk_sees_each_way_of_importing() -> None:
    """The imports the seams were once crossed with, each in a form the check must see."""
    source = ("import plan_loop.fix_plan\nfrom shared import supervisor\n"
              "def late():\n    from shared.app.status import status\n    from .monitor import series\n")
    names = {name for name, _ in imported_modules(source, ("shared",))}
    assert names == {"plan_loop.fix_plan", "shared.supervisor", "shared.app.status.status", "shared.monitor.series"}
    assert crosses("shared.app.status.status", FORBIDDEN["shared (library)"])
    assert crosses("shared.monitor.series", FORBIDDEN[ISOLATION])
    assert not crosses("shared.monitoring", {MONITOR})
