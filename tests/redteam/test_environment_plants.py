"""The project's environment is built by running code the agent wrote (the project's setup.py, for its metadata):
what that build leaves must not run in the process that measures the code. The hostile program is
tests/helpers/agents/hostile/environment_plants.py: the wrong slugify, a dependency, and a setup.py that writes a
forger into the venv as a .pth, a module and a sitecustomize.py. The forger knows canon's test names (read in the
turn) and writes a whole passing report for exactly those.

Two layers: under Landlock the project's build cannot write the venv at all (it installs into a folder of its own,
and only its METADATA is copied); and whatever the venv holds, the conformance runner starts without the site module
(`-S`), so no .pth `import` line or sitecustomize runs before pytest. Under isolation `none` the first layer is gone
(nothing is enforced) and the plant lands: the second still holds, and the control shows the same venv's forger
buying the verdict from a runner that lets site.py run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from shared.environment import project_env
from shared.environment.cache import EnvCache
from shared.journal import Journal
from shared.measurement import conformance
from shared.process import run
from shared.workspace import Workspace
from tests.helpers.workspaces import HELPERS, cli, git

PLANTS = HELPERS / "agents" / "hostile" / "environment_plants.py"
PLANTED = ("zz_forge.pth", "zz_forge_payload.py", "sitecustomize.py")
TK1_TESTS = ("tests/test_slug.py",)


def _plant(ws: Workspace) -> None:
    """The attack lands as a person's commit would; plan is the judge of record."""
    prompt = ws.state / "build" / "prompt-for-plant.md"
    prompt.parent.mkdir(parents=True, exist_ok=True)
    prompt.write_text("Requirements: TK-1\n")
    planted = subprocess.run([sys.executable, str(PLANTS), "--canon", str(ws.canon)], cwd=ws.code, capture_output=True,
                             text=True, env={"PATH": os.environ["PATH"], "BANACH_PROMPT_FILE": str(prompt)})
    assert planted.returncode == 0, planted.stderr
    git(ws.code, "add", "-A")
    git(ws.code, "commit", "-qm", "a dependency, and a setup.py")


def _venv_site(ws: Workspace, role: str) -> Path:
    [env_json] = list(EnvCache.of(ws, role).root.glob("*/env.json"))  # type: ignore[arg-type]
    [site] = list(env_json.parent.glob("venv/lib/python*/site-packages"))
    return site


def _summary(site: Path) -> str:
    """What setup.py said it reached, from the METADATA the build copied into the venv."""
    [metadata] = list(site.glob("textkit-*.dist-info/METADATA"))
    return next(line for line in metadata.read_text().splitlines() if line.startswith("Summary:"))


def _certify(ws: Workspace) -> tuple[str, list[str]]:
    result = cli("plan-loop", "certify", "--workspace", str(ws.root), timeout=600)
    plan = json.loads(ws.fix_plan_json.read_text())
    evidence = [e for item in plan["items"] if "TK-1" in item["requirements"] for e in item["evidence"]]
    return result.stdout + result.stderr, evidence


def _planted_and_measured(ws: Workspace) -> Path:
    """The attack lands as a commit and plan certifies what it can: nothing, with TK-1's wrong slugify measured as
    failing. Returns the site-packages of the venv plan measured in."""
    _plant(ws)
    out, evidence = _certify(ws)
    assert "CERTIFIED" not in out.replace("NOT CERTIFIED", ""), out
    assert evidence, "TK-1's wrong slugify was not measured as failing"
    return _venv_site(ws, "plan")


@pytest.mark.slow
@pytest.mark.landlock
def test_under_landlock_the_projects_build_cannot_write_the_environment(wide_landlock: Workspace) -> None:
    ws = wide_landlock
    site = _planted_and_measured(ws)
    summary = _summary(site)
    assert all(f"{name} DENIED" in summary for name in PLANTED), summary  # setup.py ran, and was refused
    assert not [name for name in PLANTED if (site / name).exists()]
    assert not list(site.glob("*.pth")) or all("zz_forge" not in p.read_text() for p in site.glob("*.pth"))


@pytest.mark.slow
@pytest.mark.landlock
def test_a_turn_whose_build_plants_in_the_environment_is_measured_as_it_is(wide_landlock: Workspace) -> None:
    """The same attack as an agent's turn: build measures the change in the environment its files need (built from
    a trial commit). The wrong slugify passes none of TK-1's five tests, so that is what build reads (no progress,
    rolled back); the forger would have passed all five."""
    ws = wide_landlock
    command = f"{sys.executable} {PLANTS}"
    result = cli("build-loop", "once", "--workspace", str(ws.root), "--agent-command", command, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        row = journal.last("iteration.ended")
    assert row is not None and row.data["item"].startswith("TK-1"), row and row.data
    assert row.data["changed"] == ["requirements.txt", "setup.py", "textkit/slug.py"], row.data
    assert row.data["reason"] == "no progress: the same 5 check(s) still fail" and len(row.data["failing_after"]) == 5, \
        row.data
    site = _venv_site(ws, "build")
    assert "DENIED" in _summary(site) and not [name for name in PLANTED if (site / name).exists()]


@pytest.mark.slow
def test_what_the_environment_holds_never_runs_before_pytest(wide: Workspace, tmp_path: Path) -> None:
    """Isolation `none`: nothing stops setup.py, and the forger lands in the venv. The runner still measures the
    code as it is, and the control shows the forger is live: the same run with site.py allowed is bought."""
    ws = wide
    site = _planted_and_measured(ws)
    assert all(f"{name} written" in _summary(site) for name in PLANTED), _summary(site)
    assert all((site / name).is_file() for name in PLANTED)

    ws = Workspace.open(ws.root)
    env = project_env(ws, "plan", ws.code_repo(), git(ws.code, "rev-parse", "HEAD"), ws.code)
    verdicts = {}
    for name, keep_site in (("runner", False), ("with site.py", True)):  # TK-1's tests on the committed tree
        check = conformance.prepare(ws.canon, ws.code, TK1_TESTS, tmp_path / name, python=env.python, roots=env.roots)
        if keep_site:
            check = replace(check, argv=tuple(arg for arg in check.argv if arg != "-S"))
        judgement = check.judge(run(check.request(env={"PATH": os.environ["PATH"]}, timeout=120, limits=None)))
        verdicts[name] = (all(judgement.results.values()), judgement.void)
        check.close()
    assert verdicts["runner"][0] is False and not verdicts["runner"][1], verdicts  # measured, and failing
    assert verdicts["with site.py"] == (True, ""), verdicts  # the control: the forger buys a site-running runner


SWAPPING_SETUP = r'''import os, re

KEY = {key!r}
here = os.getcwd()  # the copy of the project the metadata step builds in: KEY.building/project
target = os.path.join(os.path.dirname(here), "project-install")
if re.fullmatch(r"[0-9a-f]{{24}}\.building", os.path.basename(os.path.dirname(here))) and os.path.isdir(target):
    # bounded by its path: only inside an environment's build. pip moves what it built into the target last and
    # leaves alone what is there already, so the METADATA the copy finds is this link to the role's key
    folder = os.path.join(target, "textkit-0.1.dist-info")
    os.makedirs(folder, exist_ok=True)
    try:
        os.symlink(KEY, os.path.join(folder, "METADATA"))
    except OSError:
        pass
from setuptools import setup
setup(name="textkit", version="0.1", packages=[])
'''


@pytest.mark.slow
@pytest.mark.landlock
def test_a_metadata_swapped_for_a_link_to_a_key_is_not_followed(wide_landlock: Workspace) -> None:
    """The project's build leaves its METADATA as a link to plan's key, which plan (not the build: its view holds no
    key) could read; were the copy to follow it, the key would land in the venv, which every turn can read. (A link
    made at the last moment by a process the build left is the same file to the copy; the view ends every such
    process with the step.)"""
    ws = wide_landlock
    (ws.code / "setup.py").write_text(SWAPPING_SETUP.format(key=str(ws.keys_dir / "plan.key")))
    (ws.code / "requirements.txt").write_text("iniconfig\n")
    git(ws.code, "add", "setup.py", "requirements.txt")
    git(ws.code, "commit", "-qm", "a setup.py that links its METADATA to a key")
    key = (ws.keys_dir / "plan.key").read_bytes()
    _certify(ws)
    site = _venv_site(ws, "plan")
    landed = [path for path in site.rglob("*") if path.is_file() and not path.is_symlink() and key in path.read_bytes()]
    assert not landed, landed
    record = json.loads((site.parents[3] / "env.json").read_text())
    assert record["project_installed"].startswith("no"), record  # the link was seen and refused, not copied
