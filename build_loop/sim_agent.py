"""The SIMULATED agent: a scripted stand-in for an LLM, for the bundled example only.

It reads the prompt like a real agent would (stdin), finds the requirement ids the item names, and
copies in the example's reference change for them, with faults injected at the configured rates:
a plausible but wrong edit, no edit at all, or an extra edit outside the item's write scope. Draws
are seeded by (seed, item, the earlier attempts its prompt lists), so a run is repeatable whatever the
order in which the loops' steps interleave (under supervisord they run at once). Whatever it did, it claims SUCCESS:
the point of the harness is that this claim decides nothing.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import sys
from importlib import resources
from pathlib import Path

BANNER = "[SIMULATED AGENT: a scripted stand-in for an LLM; no model is called]"


def reference_root() -> Path:
    return Path(str(resources.files("shared.app.example") / "reference"))


def apply_reference(requirements: list[str], variant: str) -> list[str]:
    """Copy the example's reference change ('right' or 'wrong') for each requirement into the work tree."""
    touched = []
    for rid in requirements:
        source = reference_root() / rid / variant
        if not source.is_dir():
            continue
        for path in sorted(source.rglob("*")):
            if path.is_file():
                target = Path(path.relative_to(source))
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
                touched.append(str(target))
    return touched


EARLY_EXIT = ("import os as _os, sys as _sys\n"
              "if 'pytest' in _sys.modules or '_pytest' in _sys.modules:\n"
              "    _sys.stdout.flush()\n    _os._exit(0)\n")
PATCHED_RUNNER = """import sys as _sys
if "_pytest.runner" in _sys.modules:
    import _pytest.runner as _runner
    _real = _runner.call_and_report

    def _forged(item, when, log=True, **kwargs):
        report = _real(item, when, log=False, **kwargs)
        report.outcome, report.longrepr = "passed", None
        if log:
            item.ihook.pytest_runtest_logreport(report=report)
        return report

    _runner.call_and_report = _forged
"""
PLANTED_CONFTEST = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome, report.longrepr = "passed", None
"""
CHEATS = ("early-exit", "patched-runner", "planted-config")


def _cheat(kind: str, touched: list[str]) -> list[str]:
    """Ways to make wrong code look right from inside the agent's own scope (and, for the planted test-runner
    configuration, beside it): what a model rewarded for green tests can learn."""
    if kind == "planted-config":
        Path("conftest.py").write_text(PLANTED_CONFTEST)
        return ["conftest.py"]
    prefix = EARLY_EXIT if kind == "early-exit" else PATCHED_RUNNER
    for path in touched:
        if path.endswith(".py"):
            Path(path).write_text(prefix + Path(path).read_text())
    return []


def _weaken_tests() -> list[str]:
    """What a defendant-authored suite allows: rewrite the tests that judge the work so that they pass."""
    weakened = []
    for pattern in ("conformance/test_*.py", "tests/test_*.py", "../canon/tests/test_*.py"):
        for path in sorted(Path().glob(pattern)):
            try:
                path.write_text("def test_it_works():\n    assert True\n")
                weakened.append(str(path))
            except OSError as exc:
                print(f"could not weaken {path}: {exc.strerror}")
    return weakened


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="sim-agent", description="SIMULATED agent for the bundled example")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--wrong-edit", type=float, default=0.25)
    parser.add_argument("--no-edit", type=float, default=0.1)
    parser.add_argument("--out-of-scope", type=float, default=0.2)
    parser.add_argument("--tamper", type=float, default=0.0,
                        help="rate of turns that make a wrong edit and weaken the tests that would catch it")
    parser.add_argument("--cheat", choices=CHEATS, default=None,
                        help="a way to make wrong code pass its tests from inside the agent's scope")
    parser.add_argument("--cheat-rate", type=float, default=0.0, help="rate of turns that make a wrong edit and cheat")
    args = parser.parse_args(argv)

    prompt = sys.stdin.read()
    print(BANNER)
    item = re.search(r"^Banach-Item:\s*(\S+)", prompt, re.MULTILINE)
    reqs = re.search(r"^Requirements:\s*(.+)$", prompt, re.MULTILINE)
    if not item or not reqs:
        print("the prompt names no item; nothing to do")
        print("SUCCESS")
        return 0
    item_id = item.group(1)
    iteration = os.environ.get("BANACH_ITERATION", "0")
    attempt = len(re.findall(r"^- iteration \d+:", prompt, re.MULTILINE))  # not the iteration: plan's timing moves it
    draw = random.Random(f"{args.seed}:{item_id}:{attempt}")
    roll, scope_roll, tamper_roll, cheat_roll = draw.random(), draw.random(), draw.random(), draw.random()
    tamper = tamper_roll < args.tamper
    cheat = args.cheat if args.cheat and cheat_roll < args.cheat_rate else None
    if tamper or cheat or roll < args.wrong_edit:
        variant = "wrong"
    elif roll < args.wrong_edit + args.no_edit:
        variant = "none"
    else:
        variant = "right"
    touched = [] if variant == "none" else apply_reference([r.strip() for r in reqs.group(1).split(",") if r.strip()], variant)
    if scope_roll < args.out_of_scope:
        with open("README.md", "a", encoding="utf-8") as handle:
            handle.write("\nEdited by the simulated agent, outside its scope.\n")
        Path("NOTES-from-agent.md").write_text("notes the simulated agent left outside its scope\n")
        touched += ["README.md", "NOTES-from-agent.md"]
    if tamper:
        touched += _weaken_tests()
    if cheat:
        touched += _cheat(cheat, touched)
    print(f"item {item_id}, iteration {iteration}: variant={variant}{' +tamper' if tamper else ''}"
          f"{f' +cheat {cheat}' if cheat else ''}; "
          f"wrote {', '.join(touched) or 'nothing'}")
    print("SUCCESS: the task is complete and all tests pass.")  # claimed, never believed
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
