"""DESIGN's seams as a check: the loops meet only through files, so their packages never import each other,
and neither shared nor canon reaches up into a loop. Function-level imports count too."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOOPS = {"spec_loop", "plan_loop", "build_loop"}
FORBIDDEN = {
    "spec_loop": LOOPS - {"spec_loop"},
    "plan_loop": LOOPS - {"plan_loop"},
    "build_loop": LOOPS - {"build_loop"},
    "canon": LOOPS,
    "shared": LOOPS,
}


def imported_packages(path: Path) -> set[tuple[str, int]]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {(alias.name.split(".")[0], node.lineno) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add((node.module.split(".")[0], node.lineno))
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_package_imports_across_a_seam(package: str) -> None:
    violations = [f"{path.relative_to(ROOT)}:{line} imports {name}"
                  for path in sorted((ROOT / package).rglob("*.py")) if "example" not in path.parts
                  for name, line in sorted(imported_packages(path)) if name in FORBIDDEN[package]]
    assert not violations, "\n".join(violations)


def test_contracts_depend_on_the_library_alone() -> None:
    allowed_shared = {"shared.atomic", "shared.errors", "shared.journal", "shared.contracts"}
    for path in sorted((ROOT / "shared" / "contracts").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(("shared", "canon")):
                assert any(node.module.startswith(ok) for ok in allowed_shared), f"{path.name} imports {node.module}"
