"""A plan pass with sealed cases beside the same exam as pytest-form held-back tests, on the bundled example, side by side.

    python scripts/bench_sealed.py [--repeat 5] [--reach turn|machine]

Both workspaces hold the example's right code and its visible tests. One measures each requirement with its sealed
cases (canon/sealed/*.json: a call runner in the code's process, a process per command case, compared in plan's
process); the other with held-back tests generated from the very same cases (one test per case, in a pytest run of
their own with canaries). Each pass is fresh (the memo ignored, as `plan-loop certify` does); the median is printed
with the ratio (target: sealed no more than 1.2x held-back).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from build_loop.sim_agent import reference_root  # noqa: E402
from plan_loop.passes import PlanService  # noqa: E402
from scripts._bench import median_ms, timed  # noqa: E402
from shared.app.init import init_workspace  # noqa: E402
from shared.workspace import Workspace  # noqa: E402
from tests.helpers.workspaces import git, land  # noqa: E402


def held_back_tests(cases: dict[str, object]) -> str:
    """The same cases as pytest tests: one per case, a call asserting its answer or exception, a command its output."""
    lines = ["import subprocess, sys", "import pytest", ""]
    for index, case in enumerate(cases["cases"]):  # type: ignore[index]
        if "run" in case:
            argv = [sys.executable if part == "python" else part for part in case["run"]]
            lines += [f"def test_case_{index}():", f"    done = subprocess.run({argv!r}, capture_output=True, text=True, "
                      f"input={case.get('stdin', '')!r})", f"    assert done.returncode == {case.get('exit', 0)}",
                      f"    assert done.stdout.strip() == {case['stdout'].strip()!r}", ""]
            continue
        module, _, name = (case.get("call") or cases["call"]).rpartition(".")  # type: ignore[union-attr,attr-defined]
        call = f"__import__({module!r}, fromlist=['_']).{name}(*{case.get('args', [])!r})"
        if "raises" in case:
            lines += [f"def test_case_{index}():", f"    with pytest.raises({case['raises']}):", f"        {call}", ""]
        else:
            lines += [f"def test_case_{index}():", f"    assert {call} == {case['returns']!r}", ""]
    return "\n".join(lines)


def workspace(root: Path, form: str, reach: str) -> Workspace:
    ws = init_workspace(root, example=True)
    ws.config_file.write_text(ws.config_file.read_text().replace("[isolation]\n", f'[isolation]\nreach = "{reach}"\n'))
    for rid in ("TK-1", "TK-2", "TK-3", "TK-4", "TK-5"):
        source = reference_root() / rid / "right"
        for path in source.rglob("*.py"):
            (ws.code / path.relative_to(source)).write_text(path.read_text())
    git(ws.code, "add", "-A")
    git(ws.code, "commit", "-qm", "the right code")
    if form == "held-back":
        document = (ws.canon / "requirements" / "textkit.md").read_text()
        files: dict[str, str] = {}
        for sealed in sorted((ws.canon / "sealed").glob("*.json")):
            name = f"tests/test_sealed_{sealed.stem}.py"
            files[name] = held_back_tests(json.loads(sealed.read_text()))
            document = document.replace(f"sealed: sealed/{sealed.name}", f"held_back: {name}")
        files["requirements/textkit.md"] = document
        said = land(Workspace.open(ws.root), files)
        assert "accepted" in said, said
    return Workspace.open(ws.root)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--reach", default="turn", choices=("turn", "machine"))
    args = parser.parse_args()
    medians = {}
    for form in ("held-back", "sealed"):
        with tempfile.TemporaryDirectory() as tmp:
            ws = workspace(Path(tmp) / "ws", form, args.reach)
            service = PlanService(ws)
            first = service.run_pass(fresh=True)
            assert first.residual == 0, (form, first.describe())
            medians[form] = median_ms(timed(lambda s=service: s.run_pass(fresh=True), args.repeat))
            service.close()
    print(f"| the example's exam ({args.reach} views), a fresh plan pass | median |")
    print("|---|---:|")
    print(f"| as held-back pytest tests (one test per case, canaries) | {medians['held-back']:.0f} ms |")
    print(f"| as sealed cases (inputs in, answers compared outside) | {medians['sealed']:.0f} ms |")
    print(f"| sealed / held-back | {medians['sealed'] / medians['held-back']:.2f}x |")


if __name__ == "__main__":
    main()
