"""The machine's environments (shared/environment/cache.py): each dependency set built once per machine, in a cache
every workspace and role uses read-only, made under the key's lock, pruned by age and size with its last use
recorded; and the measuring environment holds what the tests need, which status says (issue 41)."""
from __future__ import annotations

import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from shared.environment import describe, project_env
from shared.environment.cache import EnvCache
from shared.workspace import Workspace
from tests.helpers.workspaces import cli, example, git, set_config


def _with_files(ws: Workspace, files: dict[str, str], extra: str = "") -> Workspace:
    for name, text in files.items():
        (ws.code / name).parent.mkdir(parents=True, exist_ok=True)
        (ws.code / name).write_text(text)
    git(ws.code, "add", "-A")
    git(ws.code, "commit", "-qm", "the project's dependency files")
    if extra:
        set_config(ws.root, extra=extra)
    return Workspace.open(ws.root)


@pytest.mark.slow
@pytest.mark.landlock
def test_two_workspaces_on_the_same_project_build_its_environment_once(tmp_path: Path) -> None:
    """Two workspaces ask at once, as two plan passes would: one builds (under the key's lock, in views of its own),
    the other waits and uses it; only the builder's own download cache exists. A third whose requirements file differs
    by one byte (the key covers every dependency file) builds its own."""
    files = {"requirements.txt": "iniconfig\n"}
    first, second = (_with_files(example(tmp_path / name, backend="landlock"), files) for name in ("a", "b"))
    asked = [(first, "plan"), (second, "build")]
    with ThreadPoolExecutor(2) as pool:
        envs = list(pool.map(lambda pair: project_env(pair[0], pair[1], pair[0].code_repo(),  # type: ignore[arg-type]
                                                      git(pair[0].code, "rev-parse", "HEAD"), pair[0].code), asked))
    assert envs[0] == envs[1] and envs[0].folder is not None, envs
    cache = EnvCache.of(first, "plan")
    assert [entry.folder for entry in cache.entries()] == [envs[0].folder]
    built_by = json.loads((envs[0].folder / "env.json").read_text())["built_by"]
    downloaded = {str(ws.root): (ws.role_dir(role) / "env" / "pip-cache").is_dir() for ws, role in asked}  # type: ignore[arg-type]
    assert downloaded == {str(first.root): built_by["workspace"] == str(first.root),
                          str(second.root): built_by["workspace"] == str(second.root)}, (downloaded, built_by)
    said = subprocess.run([envs[0].python, "-c", "import iniconfig, pytest"], capture_output=True, text=True)
    assert said.returncode == 0, said.stderr

    started = time.monotonic()
    again = project_env(second, "spec", second.code_repo(), git(second.code, "rev-parse", "HEAD"), second.code)
    assert again == envs[0] and time.monotonic() - started < 5  # found, not built

    third = _with_files(example(tmp_path / "c", backend="landlock"), {"requirements.txt": "iniconfig \n"})
    own = project_env(third, "plan", third.code_repo(), git(third.code, "rev-parse", "HEAD"), third.code)
    assert own.key != envs[0].key and own.requirements == envs[0].requirements
    assert len(cache.entries()) == 2


TEMPLATING = {
    "requirements.txt": "iniconfig\n",
    "requirements/tests.txt": "attrs\n",
    "requirements/docs.txt": "six\n",
    "requirements/lint.txt": "colorama\n",
    "requirements/dev.txt": "-r docs.txt\n-r lint.txt\n-r tests.txt\ntox\n",
    "tox.ini": "[testenv]\ndeps = -r requirements/tests.txt\ncommands = pytest\n"
               "[testenv:docs]\ndeps = -r requirements/docs.txt\n",
}


@pytest.mark.slow
@pytest.mark.landlock
def test_a_project_with_docs_and_lint_requirement_files_is_measured_without_either(tmp_path: Path) -> None:
    """Its run-time requirement and the file tox's test environment names are installed; docs, lint and the dev file
    that only includes them (and tox) are not. Status says what was installed, from which file, and what was not."""
    ws = _with_files(example(tmp_path, backend="landlock"), TEMPLATING)
    env = project_env(ws, "plan", ws.code_repo(), git(ws.code, "rev-parse", "HEAD"), ws.code)
    [site] = list(Path(env.python).parents[1].glob("lib/python*/site-packages"))
    installed = {entry.name.split("-")[0].lower() for entry in site.glob("*.dist-info")}
    assert {"iniconfig", "attrs", "pytest"} <= installed and not installed & {"six", "colorama", "tox"}, installed
    lines = describe(ws)
    assert lines[0].startswith(f"plan: venv {env.folder}; iniconfig <- requirements.txt; attrs <- requirements/tests.txt "
                               "(named by tox.ini [testenv]); pytest=="), lines
    assert "not installed: requirements/dev.txt (dev tooling; " in lines[0] and \
        "requirements/docs.txt (for docs, not for the tests); requirements/lint.txt (for lint, not for the tests)" \
        in lines[0], lines
    status = cli("banach", "status", "-w", str(ws.root))
    assert "environment plan: venv " in status.stdout and "requirements/lint.txt (for lint" in status.stdout, status


def _fake(cache: EnvCache, key: str, size: int, used_days_ago: float) -> Path:
    folder = cache.root / key
    (folder / "venv" / "bin").mkdir(parents=True)
    (folder / "venv" / "bin" / "python").symlink_to("/bin/true")
    (folder / "env.json").write_text(json.dumps({"bytes": size, "built_at": 0, "requirements": []}))
    used = cache.root / "used" / key
    used.parent.mkdir(parents=True, exist_ok=True)
    used.touch()
    when = time.time() - used_days_ago * 86400
    os.utime(used, (when, when))
    return folder


def test_pruning_keeps_the_last_used_and_what_is_in_use_and_removes_by_age_then_size(tmp_path: Path) -> None:
    ws = example(tmp_path, extra="[env]\nkeep = 1\nmax_age_days = 30\nmax_cache_bytes = 3000\n")
    cache = EnvCache.of(ws, "plan")
    newest = _fake(cache, "a" * 24, 1000, 0.1)
    old = _fake(cache, "b" * 24, 1000, 40)  # past max_age_days
    held = _fake(cache, "c" * 24, 1000, 50)  # past it too, but in use here
    recent = [_fake(cache, f"{n}" * 24, 1000, n) for n in (2, 3)]  # over the cap together: the older goes
    (cache.root / ("d" * 24 + ".building")).mkdir()  # a killed builder's
    assert cache.hold(held)  # as a loop holds what it measures in; its last use made old again below
    when = time.time() - 50 * 86400
    os.utime(cache.root / "used" / held.name, (when, when))
    removed = cache.prune()
    assert sorted(line[:12] for line in removed) == ["3" * 12, "b" * 12], removed
    kept = [entry.folder for entry in cache.entries()]
    assert kept == [newest, recent[0], held], kept
    assert not old.exists() and not (cache.root / ("d" * 24 + ".building")).exists()
    assert not list(cache.root.glob("*.removing-*"))
