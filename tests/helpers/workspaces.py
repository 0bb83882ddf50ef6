"""Builders: workspaces made the way a person makes them, with real git repositories."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from shared.app.init import init_workspace
from shared.workspace import Workspace

HELPERS = Path(__file__).resolve().parent
AGENTS = HELPERS / "agents"


def example(tmp: Path, *, backend: str = "none", extra: str = "") -> Workspace:
    """The bundled example; isolation off unless asked, since in-process tests must not restrict pytest."""
    ws = init_workspace(tmp / "ws", example=True)
    set_config(ws.root, backend=backend, extra=extra)
    return Workspace.open(ws.root)


def set_config(root: Path, *, backend: str | None = None, extra: str = "") -> None:
    config = root / "banach.toml"
    text = config.read_text()
    if backend is not None:
        text = text.replace('backend = "landlock"', f'backend = "{backend}"')
    text = agents_readable(text)
    config.write_text(text + ("\n" + extra if extra else ""))


def agents_readable(text: str) -> str:
    """banach.toml with the scripted agents' folder readable in a turn's view: a program there imports its
    neighbours (_lib.py), and a turn's view holds only the folder of the file its command line names."""
    if "read_paths" in text:
        return text
    return text.replace("[isolation]\n", f'[isolation]\nread_paths = ["{AGENTS}"]  # the scripted agents\' _lib.py\n', 1)


def agent(name: str) -> str:
    """The --agent-command line for a scripted agent in tests/helpers/agents/."""
    return f"{sys.executable} {AGENTS / name}"


def cli(program: str, *args: str, cwd: Path | None = None, input: str | None = None, env: dict[str, str] | None = None,
        timeout: float = 120, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    modules = {"banach": "shared", "spec-loop": "spec_loop", "plan-loop": "plan_loop", "build-loop": "build_loop"}
    import os

    return subprocess.run([python, "-m", modules[program], *args], cwd=cwd, input=input, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def git(repo: Path, *args: str) -> str:
    """git as a person runs it; a workspace's code keeps its git directory in build's state."""
    location = ["-C", str(repo)]
    outside = repo.parent / "state" / "build" / "code.git"
    if not (repo / ".git").exists() and outside.exists():
        location = [f"--git-dir={outside}", f"--work-tree={repo}", "-C", str(repo)]
    return subprocess.run(["git", *location, *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(repo)}).stdout.strip()


def land(ws: Workspace, files: dict[str, str], *, source: str = "test") -> str:
    """Canon files (requirements/*.md, tests/test_*.py) landed as one change through spec-loop's own path, as
    `spec-loop add` lands them; returns what spec-loop says of it, which must be an acceptance."""
    from spec_loop.draft import Draft, target_for
    from spec_loop.service import SpecService

    drafts = [Draft(Path(name).name, target_for(name) or name, text.encode()) for name, text in files.items()]
    spec = SpecService(Workspace.open(ws.root))
    try:
        with spec.locked():
            decision = spec.decide_change(drafts, source=source)
    finally:
        spec.close()
    assert decision.accepted, decision.problems
    return decision.describe()


MINIMAL = '[isolation]\nbackend = "none"\n\n[build]\nagent = "scripted"\n'


def custom(tmp: Path, canon_text: str, agent_script: str, *, config: str = "") -> Workspace:
    """An empty workspace with one canon document and a scripted agent as its only ladder rung."""
    from spec_loop.draft import Draft
    from spec_loop.service import SpecService

    ws = init_workspace(tmp / "ws", example=False)
    text = agents_readable(MINIMAL)  # not init's commented file: a test's `config` may add any table of its own
    ws.config_file.write_text(text + f'\n[agents.scripted]\npreset = "command"\ncommand = "{agent(agent_script)}"\n' + config)
    ws = Workspace.open(ws.root)
    spec = SpecService(ws)
    with spec.locked():
        decision = spec.decide(Draft("doc.md", "requirements/doc.md", canon_text.encode()), source="test")
    spec.close()
    assert decision.accepted, decision.problems
    return Workspace.open(ws.root)


# banach.toml lines for a CLI that talks to its model directly: the default network is the gateway's only
OPEN = '\n[gateway]\nnetwork = "open"  # this CLI talks to its model directly\n'


MODULES = {"spec-loop": "spec_loop", "plan-loop": "plan_loop", "build-loop": "build_loop"}


def start(program: str, ws: Workspace, *args: str, log: Path, env: dict[str, str] | None = None
          ) -> subprocess.Popen[bytes]:
    """A loop's command started by hand, as a person starts it in a terminal (its own session), logging to `log`;
    the caller ends it (stop)."""
    import os

    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", MODULES[program], *args, "--workspace", str(ws.root)],
                                stdout=out, stderr=subprocess.STDOUT, cwd=ws.root, start_new_session=True,
                                env={**os.environ, **(env or {})})


def stop(proc: subprocess.Popen[bytes], timeout: float = 60) -> int:
    """SIGTERM, and the exit code once it has ended (SIGKILL after `timeout`)."""
    import signal

    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def build_once(ws: Workspace) -> dict[str, object]:
    """One build-loop iteration through the real CLI, and what its journal says it ended with."""
    from shared.journal import Journal

    result = cli("build-loop", "once", "--workspace", str(ws.root), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        row = journal.last("iteration.ended")
    assert row is not None
    return dict(row.data)
