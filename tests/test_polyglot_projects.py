"""Issue 45's "done when", honest side: a TypeScript package tested with `node --test` and a Go module, each with a
requirement and conformance tests in its own language, walked as a new user walks them (tests/helpers/polyglot.py):
`banach init --code` sees the language, `spec-loop add` lands the requirement and its test (the dry run builds the
project's npm packages, sandboxed, through the index proxy), and a SIMULATED agent's right change certifies.
The hostile side is tests/redteam/test_polyglot_attacks.py."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from shared.environment.cache import EnvCache
from shared.isolation.sandbox import landlock_abi
from shared.workspace import Workspace
from tests.helpers.polyglot import PROJECTS, code_head, ok, source_repo, workspace
from tests.helpers.workspaces import cli

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not shutil.which("node"), reason="needs node"),
              pytest.mark.skipif(not shutil.which("go"), reason="needs go (apt-get install golang-go)")]
BACKEND = "landlock" if landlock_abi() >= 1 else "none"


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_a_scripted_agents_right_change_certifies(tmp_path: Path, name: str) -> None:
    ws, added = workspace(tmp_path, name, "right", backend=BACKEND)
    assert "conformance tests runs and fails (the residual build will work on)" in added, added
    start = code_head(ws)
    ran = cli("banach", "run", "--until-certified", "--max-turns", "3", "-w", str(ws), timeout=900)
    last = ok(ran).strip().splitlines()[-1]
    assert last.startswith("run: CERTIFIED: plan pass ") and "(1 of 1 requirements measured)" in last, ran.stdout
    assert code_head(ws) != start
    status = json.loads(ok(cli("banach", "status", "--json", "-w", str(ws))))
    assert status["certified"] is True, status
    built = [json.loads(path.read_text()) for path in EnvCache.of(Workspace.open(ws), "plan").root.glob("*/env.json")]
    if name == "wordcase-ts":  # tsx came from the registry by `npm ci`, once for the machine, and plan and build used it
        assert any(entry.get("tool") == "npm ci" for entry in built), built


SEALED = {"cases": [{"run": ["node", "--import", "tsx", "--input-type=module", "-e",
                             "import { kebabCase } from './src/index.ts'; console.log(kebabCase(process.argv[1]))",
                             text], "stdout": answer + "\n"} for text, answer in (("Hello Big World", "hello-big-world"),
                                                                                   ("toJSONString", "to-json-string"))]}


def test_sealed_run_cases_run_node_with_the_projects_own_tsx(tmp_path: Path) -> None:
    """The exam graded outside the room, for TypeScript: a sealed case's command is `node --import tsx ...` in the
    code, which finds the project's node_modules as its own commands do; only plan sees the expected output."""
    document = PROJECTS["wordcase-ts"][2].replace("tests: tests/kebab.test.ts", "tests: tests/kebab.test.ts\n"
                                                  "sealed: sealed/kebab.json")
    ws, added = workspace(tmp_path, "wordcase-ts", "right", backend=BACKEND, document=document,
                          more={"kebab.json": json.dumps(SEALED)})
    assert "sealed/kebab.json" in added, added
    ran = cli("banach", "run", "--until-certified", "--max-turns", "3", "-w", str(ws), timeout=900)
    assert ok(ran).strip().splitlines()[-1].startswith("run: CERTIFIED: plan pass "), ran.stdout
    status = json.loads(ok(cli("banach", "status", "--json", "-w", str(ws))))
    assert status["strength"].get("sealed") == ["WC-1"], status  # its pass rests on answers computed outside


@pytest.mark.parametrize("name, language, sensor", [("wordcase-ts", "TypeScript", "# command = \"node --test test/\""),
                                                    ("romannum-go", "Go", 'command = "go test ./..."')])
def test_init_sees_the_language_and_writes_a_config_and_a_first_requirement_that_fit(
        tmp_path: Path, name: str, language: str, sensor: str) -> None:
    source, _ = source_repo(tmp_path, name)
    said = ok(cli("banach", "init", str(tmp_path / "ws"), "--code", str(source)))
    assert f"the code is {language}" in said, said
    config = (tmp_path / "ws" / "banach.toml").read_text()
    assert sensor in config and "-m pytest" not in config.split("[agents.claude]")[0], config
    drafts = sorted(path.name for path in (tmp_path / "ws" / "drafts").iterdir())
    assert drafts == (["first.test.ts", "main.md"] if language == "TypeScript" else ["first_test.go", "main.md"])
    doctor = cli("banach", "doctor", "-w", str(tmp_path / "ws"), timeout=300).stdout
    program = "node" if language == "TypeScript" else "go"
    assert f"{program}: /" in doctor and "conformance tests in" in doctor, doctor
