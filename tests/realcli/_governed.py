"""One governed turn of a real agent CLI against the scripted model server: what the realcli tests of opencode,
pi and aider share. The CLI is the real program, pinned in tests/realcli/pins.toml and installed by
scripts/install_clis.py; the model is the SCRIPTED MODEL SERVER (tests/helpers/model_server), a labelled stand-in."""
from __future__ import annotations

import atexit
import functools
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from build_loop.sim_agent import reference_root
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.model_server import ModelServer, Recorded, Script, Write
from tests.helpers.private_python import private_python
from tests.helpers.workspaces import OPEN, cli, git

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = reference_root() / "TK-1"
ITEM_FILE = "textkit/slug.py"  # the example's first item, TK-1, has this scope


def _installer() -> Any:
    spec = importlib.util.spec_from_file_location("install_clis", ROOT / "scripts" / "install_clis.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("install_clis", module)  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


_INSTALLER = _installer()
CACHE = _INSTALLER.cache_root()  # read at import: each test then runs with a fresh HOME of its own


def pinned(name: str) -> Path:
    """The pinned CLI's executable, or skip the test saying how to install it."""
    pin = _INSTALLER.load_pins()[name]
    found = _INSTALLER.installed(pin, CACHE)
    if found is None:
        pytest.skip(f"{pin.package}@{pin.version} is not installed in {pin.folder(CACHE)}: "
                    f"run `python scripts/install_clis.py {name}`")
    return Path(found)


def reference(variant: str) -> str:
    return (REFERENCE / variant / ITEM_FILE).read_text()


# Looks like work, passes none of TK-1's tests (the example's own "wrong" variant passes one, and is kept as progress).
USELESS = '"""URL slugs."""\n\n\ndef slugify(text: str) -> str:\n    return text\n'


def configure(ws: Workspace, preset: str, executable: Path, model: str, env_allow: tuple[str, ...]) -> None:
    """Point the workspace's build at the real CLI, as a person does in banach.toml."""
    text = ws.config_file.read_text().replace('agent = "sim"', 'agent = "real"')
    allowed = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", *env_allow)
    text = re.sub(r"^\[build\]\n", f"[build]\nenv_allow = {list(allowed)!r}\n".replace("'", '"'), text, count=1, flags=re.M)
    text += f'\n[agents.real]\npreset = "{preset}"\ncommand = "{executable}"\nmodel = "{model}"\n'
    ws.config_file.write_text(text + OPEN)


@dataclass(frozen=True)
class Turn:
    record: dict[str, Any]  # the journal's iteration.ended
    stdout: str
    stderr: str
    seconds: float
    started: float
    prompt: str  # what the governor sent

    @property
    def decision(self) -> str:
        return str(self.record["decision"])


def files(root: Path) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            try:
                stat = path.lstat()
            except OSError:
                continue
            found[str(path.relative_to(root))] = (stat.st_mtime_ns, stat.st_size)
    return found


def changed(root: Path, before: dict[str, tuple[int, int]]) -> set[str]:
    after = files(root)
    return {path for path in set(before) | set(after) if before.get(path) != after.get(path)}


@functools.cache
def private_interpreter() -> str:
    """Banach's interpreter as pyenv installs it for root, in a folder only root may enter (tests/helpers/private_python.py):
    CI's machine has one, and a turn that gives up root must still work there (issue 38)."""
    folder = Path(tempfile.mkdtemp(prefix="banach-realcli-python-"))
    atexit.register(shutil.rmtree, folder, True)
    return str(private_python(folder))


def governed_turn(ws: Workspace, env: dict[str, str], *, turn_timeout: float = 120) -> Turn:
    """`build-loop once`, run on the private interpreter."""
    started = time.time()
    result = cli("build-loop", "once", "--workspace", str(ws.root), "--turn-timeout", str(turn_timeout), env=env,
                 timeout=turn_timeout + 240, python=private_interpreter())
    seconds = time.time() - started
    assert result.returncode == 0, result.stderr
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        row = journal.last("iteration.ended")
    assert row is not None, result.stdout + result.stderr
    prompt = (ws.role_dir("build") / "iterations" / str(row.data["n"]) / "prompt.md").read_text()
    return Turn(row.data, result.stdout, result.stderr, seconds, started, prompt)


def _said(message: object) -> str:
    """A chat message's text, whatever its shape (a string, or a list of parts)."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content") if "content" in message else message.get("parts")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content)
    return ""


def _fresh(request: Recorded, marker: str) -> bool:
    """A request that starts the conversation with the prompt: nothing the model said comes after the prompt. (What a
    CLI puts before it, such as aider's own example exchange, is not this conversation.)"""
    body = request.body if isinstance(request.body, dict) else {}
    messages = body.get("messages") or body.get("contents") or []  # chat and Anthropic; Gemini's role is "model"
    given = body.get("input")
    items: list[Any] = given if isinstance(given, list) else []  # OpenAI Responses (codex)
    start = next((index for index, m in enumerate(messages) if marker in _said(m)), 0)
    if messages and _said(messages[start]).startswith("# USER\n"):
        return False  # aider's summary of a chat: the conversation retold in one message, not a new one
    said = any(isinstance(m, dict) and m.get("role") in ("assistant", "model") for m in messages[start:])
    return not said and not any(isinstance(i, dict) and (i.get("role") == "assistant" or i.get("type") in
                                                         ("function_call", "function_call_output", "custom_tool_call"))
                                for i in items)


def assert_prompt_once(server: ModelServer, turn: Turn) -> None:
    """The prompt reached the model once: one conversation began with it, and it is in there once."""
    marker = next(line for line in turn.prompt.splitlines() if line.startswith("Requirements:"))
    openings = [r for r in server.model_requests if marker in r.user_text and _fresh(r, marker)]
    assert len(openings) == 1, [(r.path, r.tools[:3], r.answer) for r in openings]
    assert openings[0].user_text.count(marker) == 1


def _turn_of(pid: str, ws: Workspace) -> bool:
    """Whether a process belongs to a turn in this workspace: its working folder is in it, or its environment names
    the turn's prompt there (every agent gets BANACH_PROMPT_FILE, and its children inherit it)."""
    root = str(ws.root.resolve())
    try:
        if os.readlink(f"/proc/{pid}/cwd").startswith(root + "/"):
            return True
        environ = Path("/proc", pid, "environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(line.startswith(b"BANACH_PROMPT_FILE=" + root.encode() + b"/") for line in environ)


def assert_no_survivors(install: Path, ws: Workspace) -> None:
    """No process of the CLI outlives its turn (its children may have left the session). Only this workspace's turns
    are looked at: other tests may run the same CLI at the same time (pytest-xdist)."""
    folder = str(install) + "/"
    survivors = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path("/proc", entry, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            exe = os.readlink(f"/proc/{entry}/exe")
        except OSError:
            continue
        if (folder in cmdline or exe.startswith(folder)) and _turn_of(entry, ws):
            survivors.append((int(entry), cmdline[:200]))
    assert not survivors, survivors


def cli_folder(executable: Path) -> Path:
    """The install folder (…/clis/<name>-<version>/), whatever its layout below."""
    for parent in executable.parents:
        if parent.parent.name == "clis":
            return parent
    return executable.parent


def head(ws: Workspace) -> str:
    return git(ws.code, "rev-parse", "HEAD")


def outside_writes(ws: Workspace, home: Path, before_ws: dict[str, tuple[int, int]], before_home: dict[str, tuple[int, int]],
                   state: tuple[str, ...]) -> set[str]:
    """What changed outside the work tree, build's own state, and the CLI's state folders in HOME."""
    inside = (f"{ws.code.relative_to(ws.root)}/", f"{ws.state.relative_to(ws.root)}/")
    stray = {p for p in changed(ws.root, before_ws) if not p.startswith(inside)}
    stray |= {f"~/{p}" for p in changed(home, before_home) if not p.startswith(state)}
    return stray


Setup = Callable[[ModelServer], tuple[Path, dict[str, str]]]  # points the CLI at the server: (executable, env)


def right_edit_is_kept(ws: Workspace, setup: Setup, *, key: str, state: tuple[str, ...], name: str) -> None:
    """A right edit is kept; the prompt reached the model once with the test's key; nothing outside the work
    tree and the CLI's own state was written; no process outlived the turn."""
    with ModelServer(Script.of(Write({ITEM_FILE: reference("right")}), root=str(ws.code), api_key=key)) as server:
        executable, env = setup(server)
        before_ws, before_home, start = files(ws.root), files(Path.home()), head(ws)
        turn = governed_turn(ws, env)
        assert turn.decision == "keep", (turn.record, turn.stdout, turn.stderr)
        assert head(ws) != start
        assert_prompt_once(server, turn)
        assert all(r.api_key == key for r in server.model_requests)
        assert not server.unknown
    assert outside_writes(ws, Path.home(), before_ws, before_home, state) == set()
    assert_no_survivors(cli_folder(executable), ws)
    print(f"{name} turn: {turn.record['duration']} s (build-loop once: {turn.seconds:.1f} s)")


def wrong_edit_is_rolled_back(ws: Workspace, setup: Setup, *, key: str) -> None:
    with ModelServer(Script.of(Write({ITEM_FILE: USELESS}), root=str(ws.code), api_key=key)) as server:
        executable, env = setup(server)
        start = head(ws)
        turn = governed_turn(ws, env)
    assert turn.decision == "rollback", (turn.record, turn.stdout, turn.stderr)
    assert head(ws) == start
    assert not (ws.code / ITEM_FILE).exists() or (ws.code / ITEM_FILE).read_text() != USELESS
    assert_no_survivors(cli_folder(executable), ws)


def first_run_works(ws: Workspace, setup: Setup, *, key: str) -> None:
    """setup must leave HOME as a CLI that never ran on the account finds it."""
    with ModelServer(Script.of(Write({ITEM_FILE: reference("right")}), root=str(ws.code), api_key=key)) as server:
        executable, env = setup(server)
        turn = governed_turn(ws, env)
    assert turn.decision == "keep", (turn.record, turn.stdout, turn.stderr)
    assert_no_survivors(cli_folder(executable), ws)
