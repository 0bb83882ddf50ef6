"""Every real CLI in a governed turn run by an ordinary user, through Banach's model gateway, under Landlock.

The rest of the realcli suite runs as root (as CI does); issue 16 asks for each preset's turn to work as an ordinary
user too. Here `build-loop once` runs as a system account, with no supplementary groups, dropped to by subprocess's
user=/group=/extra_groups=[]. Not `setpriv --reuid`: on this machine setpriv's own exec still reached an interpreter
under /root that the account cannot enter, which hides the problem until build-loop starts its next Python. The model
is the SCRIPTED MODEL SERVER (tests/helpers/model_server), a labelled stand-in; each CLI is the real program, pinned in
tests/realcli/pins.toml.

How the account gets its turn, and why:
- The account: `banach-realcli-test`, made for the session with useradd --system --no-create-home (or reused when it
  exists) and removed at the end only if this session made it. Not uid 65534: nobody should own nothing, and the
  workspace and its commits become the account's. Making it takes root: the tests are marked `root`.
- Nothing is run from a folder the account cannot enter, and no such folder is opened (/root stays 0700). When the
  interpreter running pytest is out of reach (pyenv under /root here), or this checkout is (a clone in a 0700
  folder), build-loop runs on a venv in the session's folder, made from a reachable interpreter of the same minor
  version and holding a copy of what Banach has installed: its requirements, and its packages copied as a user would
  install them (not the editable finder, which points at this checkout); with no such interpreter the tests skip
  saying so. A CLI whose pinned install (scripts/install_clis.py, in ~/.cache) is out of reach is copied
  once per session (cp -a; hard links would share inodes with the cache, and aider's venv is changed in the copy:
  rebased with `venv --upgrade` onto a reachable interpreter, as its own lives under /root). Aider's scripts name the
  cache's venv in their shebang, so its preset's `command` is `<copy>/venv/bin/python -m aider`. Node: from PATH.
- The workspace: the measured example (fixture `measured_landlock`, made by root), moved out of pytest's tmp (whose
  folders are root's alone) into the session's folder and handed over (chown -R). HOME: an empty folder of the
  account's, as where no CLI ever ran. The environment is explicit: PATH (node's folder first), HOME, LANG, and the
  provider key's variable, which build-loop keeps for its gateway.

The turn must end as a root turn does (tests/realcli/_governed.py): the right edit kept in a new commit, the prompt
sent once, every call on the journal and made with the provider's key, nothing written outside the work tree, build's
state and the CLI's own state, no survivors; and every file in the workspace, the commit's included, is the account's."""
from __future__ import annotations

import grp
import importlib.metadata
import os
import pwd
import re
import shutil
import site
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import build_loop
from shared.isolation.users import NOLOGIN, unreachable_ancestors
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.model_server import ModelServer, Script, Write
from tests.helpers.workspaces import git
from tests.realcli._governed import (
    ITEM_FILE,
    Turn,
    assert_no_survivors,
    assert_prompt_once,
    cli_folder,
    files,
    outside_writes,
    pinned,
    reference,
)
from tests.realcli._routed import MODEL, Routed, configure, model_calls

pytestmark = [pytest.mark.realcli, pytest.mark.landlock, pytest.mark.root]
ACCOUNT = "banach-realcli-test"
CHECKOUT = Path(build_loop.__file__).resolve().parent.parent  # where Banach's packages are (an editable install's)
PACKAGES = ("shared", "canon", "spec_loop", "plan_loop", "build_loop")
CANARY = "sk-CANARY-ordinary-user-provider-key-6160"
TURN_TIMEOUT = 150


CLIS = [Routed("claude", "anthropic"), Routed("codex", "openai"), Routed("gemini", "gemini"),
        Routed("aider", "openai", (".aider/",)), Routed("pi", "openai"), Routed("opencode", "openai")]


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int


def _lookup(name: str) -> Account | None:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return Account(name, entry.pw_uid, entry.pw_gid)


@pytest.fixture(scope="session")
def account() -> Iterator[Account]:
    """The ordinary user: this session's own system account, or the one a previous session left."""
    found = _lookup(ACCOUNT)
    if found is None:
        if shutil.which("useradd") is None:
            pytest.skip("useradd is not installed (Debian: the 'passwd' package): cannot make an ordinary user")
        made = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", NOLOGIN, "--user-group", ACCOUNT],
                              capture_output=True, text=True, check=False)
        assert made.returncode == 0, f"useradd {ACCOUNT}: {made.stderr}"
        found = _lookup(ACCOUNT)
        assert found is not None
        created = True
    else:
        created = False
    try:
        yield found
    finally:
        if created:
            subprocess.run(["userdel", ACCOUNT], capture_output=True, check=False)
            try:
                grp.getgrnam(ACCOUNT)
            except KeyError:
                pass
            else:
                subprocess.run(["groupdel", ACCOUNT], capture_output=True, check=False)


def _as(account: Account, argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float) \
        -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, user=account.uid, group=account.gid, extra_groups=[], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def _reachable(path: Path) -> bool:
    return path.exists() and not unreachable_ancestors(path)


def _venv_base(venv: Path) -> Path | None:
    """The folder of the interpreter a venv runs on (its pyvenv.cfg's home); None when there is no venv."""
    config = venv / "pyvenv.cfg"
    if not config.is_file():
        return None
    home = re.search(r"^home\s*=\s*(.+)$", config.read_text(), re.M)
    assert home, f"{config} names no home"
    return Path(home.group(1).strip())


def _requirement_closure(*names: str) -> list[importlib.metadata.Distribution]:
    """The distributions installed in this interpreter's site-packages that `names` need, themselves included
    (markers evaluated with no extra). Only site-packages: the checkout on sys.path holds a stale banach.egg-info."""
    found: dict[str, importlib.metadata.Distribution] = {}
    todo = list(names)
    while todo:
        wanted = todo.pop()
        key = re.sub(r"[-_.]+", "-", wanted).lower()
        if key in found:
            continue
        installed = list(importlib.metadata.distributions(name=wanted, path=site.getsitepackages()))
        assert installed, f"{wanted} (needed by {', '.join(names)}) is not installed in {site.getsitepackages()}"
        found[key] = installed[0]
        for line in found[key].requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(found.values())


class Session:
    """The session's folder (0755, in the system's temp dir), and what the account runs from it."""

    def __init__(self, root: Path, account: Account) -> None:
        self.root = root
        self.account = account
        self._python: Path | None = None
        self._clis: dict[str, tuple[Path, Path]] = {}  # name: (install folder, executable in it)
        self._homes = 0

    def interpreter(self, version: tuple[int, int]) -> Path:
        """A Python of this minor version that the account can run, or skip saying why none is."""
        name = f"python{version[0]}.{version[1]}"
        found = shutil.which(name, path="/usr/local/bin:/usr/bin:/bin")
        candidates = [Path(sys.executable), *([Path(found)] if found else [])]
        for candidate in candidates:
            if not _reachable(candidate):
                continue
            said = _as(self.account, [str(candidate), "-c", "import sys; print(*sys.version_info[:2])"],
                       env={"PATH": "/usr/bin:/bin"}, cwd=self.root, timeout=60)
            if said.returncode == 0 and tuple(map(int, said.stdout.split())) == version:
                return candidate
        blocked = ", ".join(map(str, unreachable_ancestors(Path(sys.executable))))
        pytest.skip(f"no {name} the account {self.account.name} can run: {sys.executable} is behind {blocked} "
                    f"(not opened by these tests) and there is no {name} on /usr/local/bin:/usr/bin:/bin")

    @property
    def python(self) -> Path:
        """The interpreter build-loop runs on as the account: this one when reachable, else a venv in the session's
        folder with a copy of Banach's installed requirements."""
        if self._python is None:
            if _reachable(Path(sys.executable)) and _reachable(CHECKOUT):
                self._python = Path(sys.executable)
            else:
                self._python = self._venv_with_banach()
        return self._python

    def _venv_with_banach(self) -> Path:
        base = self.interpreter(sys.version_info[:2])
        venv = self.root / "python"
        subprocess.run([str(base), "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
        site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
        for distribution in _requirement_closure("banach"):
            for listed in distribution.files or []:
                source = Path(str(distribution.locate_file(listed)))
                if listed.parts[0] == ".." or not source.is_file() or listed.name.startswith("__editable__"):
                    continue  # console scripts (bin/), what RECORD lists but is gone, and the finder of this checkout
                target = site / listed
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        for package in PACKAGES:  # Banach itself as a user would install it: its packages, not a link to this checkout
            shutil.copytree(CHECKOUT / package, site / package, ignore=shutil.ignore_patterns("__pycache__"))
        return venv / "bin" / "python"

    def cli(self, name: str) -> tuple[Path, Path]:
        """The pinned CLI's install folder where the account can run it, and its executable there: the cache's when
        the account can reach it and all it needs, else a copy made once per session (a venv is rebased in the copy,
        never in the cache)."""
        if name not in self._clis:
            executable = pinned(name)  # or skip: not installed
            folder = cli_folder(executable)
            relative = executable.relative_to(folder)
            venv = _venv_base(folder / "venv")
            if not _reachable(folder) or (venv is not None and not _reachable(venv)):
                copy = self.root / "clis" / folder.name  # cli_folder() finds an install by its parent named "clis"
                copy.parent.mkdir(exist_ok=True)
                subprocess.run(["cp", "-a", str(folder), str(copy)], check=True, capture_output=True)
                folder = copy
                if venv is not None and not _reachable(venv):
                    self._rebase(folder / "venv")
            self._clis[name] = (folder, folder / relative)
        return self._clis[name]

    def _rebase(self, venv: Path) -> None:
        """Point a copied venv at an interpreter of its version that the account can run."""
        version = re.search(r"^version\s*=\s*(\d+)\.(\d+)", (venv / "pyvenv.cfg").read_text(), re.M)
        assert version, f"{venv / 'pyvenv.cfg'} names no version"
        base = self.interpreter((int(version.group(1)), int(version.group(2))))
        for link in (venv / "bin").glob("python*"):
            if link.is_symlink():
                link.unlink()  # venv --upgrade keeps the links that exist
        subprocess.run([str(base), "-m", "venv", "--upgrade", "--without-pip", str(venv)], check=True,
                       capture_output=True)

    def command(self, name: str) -> str:
        """agents.NAME.command for the account: the pinned executable; for aider, whose scripts name the cache's venv
        in their shebang, its venv's python -m aider."""
        folder, executable = self.cli(name)
        return f"{folder / 'venv' / 'bin' / 'python'} -m aider" if name == "aider" else str(executable)

    def home(self) -> Path:
        """A HOME of the account's own where no CLI has run yet."""
        self._homes += 1
        home = self.root / "homes" / str(self._homes)
        home.mkdir(parents=True, mode=0o700)
        os.chown(home, self.account.uid, self.account.gid)
        return home

    def give(self, path: Path) -> None:
        """chown -R to the account."""
        os.chown(path, self.account.uid, self.account.gid, follow_symlinks=False)
        for folder, dirs, names in os.walk(path):
            for name in dirs + names:
                os.chown(os.path.join(folder, name), self.account.uid, self.account.gid, follow_symlinks=False)


@pytest.fixture(scope="session")
def session(account: Account) -> Iterator[Session]:
    node = shutil.which("node")
    if node is None or not _reachable(Path(node)):
        pytest.skip(f"node is not on PATH where {account.name} can run it ({node}); the npm CLIs need it")
    root = Path(tempfile.mkdtemp(prefix="banach-realcli-user-"))
    try:
        root.chmod(0o755)
        if unreachable_ancestors(root):
            pytest.skip(f"{account.name} cannot enter {', '.join(map(str, unreachable_ancestors(root)))}, on the way "
                        f"to the temp dir {root.parent}: set TMPDIR to a folder all accounts can enter")
        yield Session(root, account)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def user_ws(measured_landlock: Workspace, session: Session) -> Iterator[Workspace]:
    """The measured example, moved where the account can reach it (it is handed over in the test, after setup)."""
    folder = Path(tempfile.mkdtemp(prefix="ws-", dir=session.root))
    folder.chmod(0o755)
    try:
        target = folder / "ws"
        shutil.move(str(measured_landlock.root), target)
        yield Workspace.open(target)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def head(ws: Workspace) -> str:
    # git refuses a repository its user does not own; root reads the account's here
    return git(ws.code, "-c", "safe.directory=*", "rev-parse", "HEAD")


def turn_as(session: Session, ws: Workspace, home: Path) -> tuple[Turn, set[str]]:
    """`build-loop once` as the account; the turn, and the workspace's files that do not belong to the account
    (looked at before the journal is read)."""
    node_dir = str(Path(shutil.which("node") or "/usr/bin/node").parent)
    env = {"PATH": f"{node_dir}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "SCRIPTED_KEY": CANARY}
    argv = [str(session.python), "-I", "-m", "build_loop", "-v", "once", "--workspace", str(ws.root),
            "--turn-timeout", str(TURN_TIMEOUT)]
    started = time.time()
    result = _as(session.account, argv, env=env, cwd=ws.root, timeout=TURN_TIMEOUT + 240)
    seconds = time.time() - started
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    foreign = {str(Path(folder, name).relative_to(ws.root)) for folder, dirs, names in os.walk(ws.root)
               for name in dirs + names if Path(folder, name).lstat().st_uid != session.account.uid}
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        row = journal.last("iteration.ended")
    assert row is not None, result.stdout + result.stderr
    prompt = (ws.role_dir("build") / "iterations" / str(row.data["n"]) / "prompt.md").read_text()
    return Turn(row.data, result.stdout, result.stderr, seconds, started, prompt), foreign


def output(ws: Workspace, turn: Turn) -> str:
    path = ws.role_dir("build") / "iterations" / str(turn.record["n"]) / "output.txt"
    return path.read_text()[-3000:] if path.exists() else "(no output.txt)"


@pytest.mark.parametrize("cli", CLIS, ids=[c.name for c in CLIS])
def test_an_ordinary_users_turn_is_kept_with_every_call_on_the_record(user_ws: Workspace, session: Session,
                                                                       cli: Routed) -> None:
    ws, account = user_ws, session.account
    command = session.command(cli.name)
    python = session.python
    home = session.home()
    with ModelServer(Script.of(Write({ITEM_FILE: reference("right")}), root=str(ws.code), api_key=CANARY)) as server:
        configure(ws, cli, command, server)
        start = head(ws)
        session.give(ws.root)
        before_ws = files(ws.root)
        turn, foreign = turn_as(session, ws, home)
        assert turn.decision == "keep", (turn.record, turn.stdout[-2000:], turn.stderr[-2000:], output(ws, turn))
        assert head(ws) != start
        assert_prompt_once(server, turn)
        assert server.model_requests and all(r.api_key == CANARY for r in server.model_requests)
    calls = model_calls(ws, turn.record["n"])
    assert calls and all(c["status"] == 200 and c["model"] == MODEL for c in calls), calls
    assert turn.record["model_calls"] == len(calls) == len(server.model_requests)
    assert foreign == set(), f"not the account's: {sorted(foreign)}"
    committed = git(ws.code, "-c", "safe.directory=*", "show", "--name-only", "--format=", "HEAD").split()
    assert ITEM_FILE in committed
    assert {(ws.code / path).stat().st_uid for path in committed} == {account.uid}
    assert outside_writes(ws, home, before_ws, {}, cli.state) == set()
    assert "build-loop: isolation landlock: Landlock ABI" in turn.stderr, turn.stderr[-2000:]
    # without a delegated cgroup the account cannot contain its turns in one, and build says so when it starts
    assert "NO run cgroups" in turn.stderr, turn.stderr[-2000:]
    assert_no_survivors(cli_folder(Path(command.split()[0])), ws)
    print(f"{cli.name} as {account.name} (uid {account.uid}, python {python}): {len(calls)} calls, "
          f"turn {turn.record['duration']} s (build-loop once: {turn.seconds:.1f} s)")
