"""The three governed-turn cases for the CLIs whose presets take a base_url (claude, codex, gemini, qwen): a right
edit kept, a wrong one rolled back, a 429 ended as rate_limited. The CLI is the real program (tests/realcli/pins.toml);
the model is the SCRIPTED MODEL SERVER, a labelled stand-in."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from shared.workspace import Workspace
from tests.helpers.model_server import ModelServer, RateLimit, Script, Write
from tests.helpers.workspaces import OPEN
from tests.realcli._governed import (
    ITEM_FILE,
    USELESS,
    Turn,
    assert_no_survivors,
    assert_prompt_once,
    cli_folder,
    files,
    governed_turn,
    head,
    outside_writes,
    pinned,
    reference,
)

MODEL = "scripted-model"


@dataclass(frozen=True)
class Cli:
    name: str  # in pins.toml
    preset: str  # banach.toml preset
    key: str  # the key the test hands build-loop; the server accepts no other
    key_env: str  # the variable build-loop holds it in (agents.NAME.api_key_env)
    base_path: str = ""  # appended to the server's URL: "/v1" for OpenAI's wire formats
    state: tuple[str, ...] = ()  # HOME-relative folders the CLI may write (with a base_url: none)
    extra: str = ""  # more lines for [agents.real]


def configure(ws: Workspace, cli: Cli, executable: Path, url: str) -> None:
    """banach.toml as a person writes it: the preset, its endpoint and the name of the key's variable."""
    text = ws.config_file.read_text().replace('agent = "sim"', 'agent = "real"')
    lines = [f'preset = "{cli.preset}"', f'api_key_env = "{cli.key_env}"', f'command = "{executable}"',
             f'model = "{MODEL}"', f'base_url = "{url}"']
    ws.config_file.write_text(text + "\n[agents.real]\n" + "\n".join(lines) + "\n" + cli.extra + OPEN)


def _turn(ws: Workspace, cli: Cli, timeout: float = 150) -> Turn:
    return governed_turn(ws, {cli.key_env: cli.key}, turn_timeout=timeout)


def right_edit_is_kept(ws: Workspace, cli: Cli) -> Turn:
    executable = pinned(cli.name)
    with ModelServer(Script.of(Write({ITEM_FILE: reference("right")}), root=str(ws.code), api_key=cli.key)) as server:
        configure(ws, cli, executable, server.url + cli.base_path)
        before_ws, before_home, start = files(ws.root), files(Path.home()), head(ws)
        turn = _turn(ws, cli)
        assert turn.decision == "keep", (turn.record, turn.stdout, turn.stderr, _output(ws, turn))
        assert head(ws) != start
        assert_prompt_once(server, turn)
        assert server.model_requests and all(r.api_key == cli.key for r in server.model_requests)
    stray = outside_writes(ws, Path.home(), before_ws, before_home, cli.state)
    assert stray == set(), stray
    assert_no_survivors(cli_folder(executable), ws)
    print(f"{cli.name} turn: {turn.record['duration']} s (build-loop once: {turn.seconds:.1f} s)")
    return turn


def wrong_edit_is_rolled_back(ws: Workspace, cli: Cli) -> Turn:
    executable = pinned(cli.name)
    with ModelServer(Script.of(Write({ITEM_FILE: USELESS}), root=str(ws.code), api_key=cli.key)) as server:
        configure(ws, cli, executable, server.url + cli.base_path)
        start = head(ws)
        turn = _turn(ws, cli)
    assert turn.decision == "rollback", (turn.record, turn.stdout, turn.stderr, _output(ws, turn))
    assert head(ws) == start
    assert not (ws.code / ITEM_FILE).exists() or (ws.code / ITEM_FILE).read_text() != USELESS
    assert_no_survivors(cli_folder(executable), ws)
    return turn


def rate_limit_ends_the_turn(ws: Workspace, cli: Cli, *, reset_printed: bool) -> Turn:
    """reset_printed: whether the CLI prints the wait the provider gave (gemini does; claude and codex print only the
    status, so the reset time stays None and build-loop backs off on its own)."""
    executable = pinned(cli.name)
    with ModelServer(Script.of(RateLimit(retry_after=20), root=str(ws.code), api_key=cli.key)) as server:
        configure(ws, cli, executable, server.url + cli.base_path)
        turn = _turn(ws, cli, timeout=240)
    assert turn.decision == "rate_limited", (turn.record, turn.stdout, turn.stderr, _output(ws, turn))
    assert turn.record["exit_code"] != 0 and not turn.record["timed_out"]
    resets_at = turn.record["resets_at"]
    if reset_printed:
        assert resets_at is not None and turn.started + 20 <= resets_at <= turn.started + turn.seconds + 21
    else:
        assert resets_at is None
    assert_no_survivors(cli_folder(executable), ws)
    print(f"{cli.name} 429 turn: {turn.record['duration']} s")
    return turn


def _output(ws: Workspace, turn: Turn) -> str:
    path = ws.role_dir("build") / "iterations" / str(turn.record["n"]) / "output.txt"
    text = path.read_text() if path.exists() else ""
    return re.sub(r"\s+", " ", text)[-3000:]
