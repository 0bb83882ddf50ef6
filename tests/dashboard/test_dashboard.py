"""banach serve over real HTTP: who may read it, who may act, and what each action leaves on record."""
from __future__ import annotations

import os
import re
import stat
import urllib.error
import urllib.parse
import urllib.request

import pytest

from shared.dashboard.auth import csrf_value, token_path
from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.dashboard import Served, served
from tests.helpers.workspaces import agent, cli


def get(served_at: Served, path: str, *, token: bool = True) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {served_at.token}"} if token else {}
    request = urllib.request.Request(served_at.base + path, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def post(served_at: Served, path: str, fields: dict[str, str], *, csrf: bool = True,
         origin: str | None = None) -> tuple[int, str]:
    form = {**fields, **({"csrf": csrf_value(served_at.token)} if csrf else {})}
    headers = {"Authorization": f"Bearer {served_at.token}", "Origin": origin or served_at.base}
    request = urllib.request.Request(served_at.base + path, data=urllib.parse.urlencode(form).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def block_one(ws: Workspace) -> str:
    text = (ws.root / "banach.toml").read_text().replace("max_attempts = 4", "max_attempts = 1\nrounds = 1")
    (ws.root / "banach.toml").write_text(text)
    ran = cli("build-loop", "once", "--workspace", str(ws.root), "--agent-command", agent("no_change.py"))
    found = re.search(r"\(([A-Z]+-\d+\.[0-9a-f]+)\): stall", ran.stdout)
    assert found, ran.stdout + ran.stderr
    return found.group(1)


def test_every_page_needs_the_token_and_the_token_is_hidden_with_the_keys(measured: Workspace) -> None:
    with served(measured) as at:
        for path in ("/", "/items", "/iterations", "/canon", "/spend", "/journal", "/plot.svg", "/events"):
            code, body = get(at, path, token=False)
            assert code == 403 and "needs its token" in body, (path, code)
        request = urllib.request.Request(at.base + "/act/unblock", data=b"target=", method="POST")
        try:
            urllib.request.urlopen(request, timeout=30)
            raise AssertionError("an unauthenticated POST was served")
        except urllib.error.HTTPError as exc:
            assert exc.code == 403
        code, body = get(at, "/")
        assert code == 200 and "residual" in body and f"v{1}" in body
    path = token_path(measured)
    assert path.parent == measured.keys_dir and stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_change_needs_the_pages_csrf_value_and_origin(measured: Workspace) -> None:
    item = block_one(measured)
    with served(measured) as at:
        assert post(at, "/act/unblock", {"target": item}, csrf=False)[0] == 403
        assert post(at, "/act/unblock", {"target": item}, origin="http://evil.example")[0] == 403
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        assert not journal.rows("item.unblocked")  # neither got through


def test_unblock_is_done_by_build_loop_and_journaled_with_who_asked(measured: Workspace) -> None:
    item = block_one(measured)
    with served(measured) as at:
        code, items_page = get(at, "/items")
        assert code == 200 and item in items_page and "blocked" in items_page
        code, body = post(at, "/act/unblock", {"target": item, "back": "/items"})
        assert code == 200 and f"unblocked {item.rsplit('.', 1)[0]} (item {item})" in body, body
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        assert [row.data["item"] for row in journal.rows("item.unblocked")] == [item]
    with Journal(measured.state / "serve" / "journal.db", readonly=True) as journal:
        (row,) = journal.rows("dashboard.action")
        assert journal.verify().ok
    assert row.data["action"] == "unblock" and row.data["target"] == item and row.data["ok"]
    assert row.data["by"]["remote"] == "127.0.0.1" and row.data["by"]["via"] == "dashboard"
    # issue 43: the dashboard's own journal is read like any other, from the CLI and on its Journal page
    shown = cli("banach", "journal", "show", "dashboard", "-w", str(measured.root)).stdout
    assert "dashboard.action" in shown and f"unblock {item}: done (from 127.0.0.1, via the dashboard): unblocked " in shown
    with served(measured) as at:
        code, journal_page = get(at, "/journal")
    assert code == 200 and 'class="dashboard-actions"' in journal_page and item in journal_page


def test_a_canon_edit_goes_through_spec_loop_which_refuses_or_makes_a_version(measured: Workspace) -> None:
    with served(measured) as at:
        code, canon_page = get(at, "/canon?edit=requirements/textkit.md")
        assert code == 200 and "TK-1" in canon_page
        current = (measured.canon / "requirements" / "textkit.md").read_text()
        code, body = post(at, "/act/save", {"target": "requirements/textkit.md", "text": current + "\n## broken\n"})
        assert code == 200 and "refused" in body and "requirements/textkit.md:" in body, body
        # issue 43: the editor comes back holding what was typed, with the refusal above it
        refusal, editor = body.index('id="refusal"'), body.index('<textarea name="text"')
        assert refusal < editor and "## broken" in body[editor:body.index("</textarea>")], body
        assert "v1" in cli("spec-loop", "log", "--workspace", str(measured.root)).stdout
        added = current + ("\n## TK-9: the package has a docstring\npriority: 5\npaths: textkit/__init__.py\nchecks:\n"
                           "  - python -c \"import textkit; assert textkit.__doc__\"\n\nThe package says what it is.\n")
        code, body = post(at, "/act/save", {"target": "requirements/textkit.md", "text": added})
        assert code == 200 and "as canon v2" in body, body
    log = cli("spec-loop", "log", "--workspace", str(measured.root)).stdout
    assert "v2" in log and "TK-9" in log


def test_no_page_carries_a_provider_key(measured: Workspace) -> None:
    key = "sk-test-" + "7" * 40
    config = measured.root / "banach.toml"
    config.write_text(config.read_text() + '\n[gateway.providers.scripted]\nwire = "anthropic"\nbase_url = '
                      '"http://127.0.0.1:9"\n')
    stored = cli("build-loop", "key", "set", "scripted", "--workspace", str(measured.root), input=key + "\n")
    assert stored.returncode == 0, stored.stderr
    ran = cli("build-loop", "once", "--workspace", str(measured.root), "--agent-command",
              f"{agent('no_change.py')} {key}")  # the agent's command line, and so its record, holds the key
    assert ran.returncode in (0, 1)
    with served(measured) as at:
        pages = [get(at, path)[1] for path in ("/", "/iterations", "/iterations/1", "/items", "/spend", "/journal")]
    assert all(key not in page for page in pages)
    assert any("[a provider key, withheld]" in page for page in pages)


def test_iterations_are_paged_and_found_by_their_words(measured: Workspace) -> None:
    for _ in range(3):
        cli("build-loop", "once", "--workspace", str(measured.root), "--agent-command", agent("no_change.py"))
    with served(measured) as at:
        _, everything = get(at, "/iterations")
        _, none = get(at, "/iterations?q=no-such-word-anywhere")
        _, detail = get(at, "/iterations/1")
    assert "3 turn(s)" in everything and 'href="/iterations/3"' in everything
    assert "0 turn(s) matching" in none
    assert "Receipt:" in detail and "verified (2 journal rows" in detail


def test_a_fresh_plan_pass_is_plan_loops_own_and_a_page_value_is_never_an_option(measured: Workspace) -> None:
    with Journal(measured.journal_path("plan"), readonly=True) as journal:
        passes = journal.count("pass")
    with served(measured) as at:
        code, body = post(at, "/act/plan-pass", {})
        assert code == 200 and "plan pass" in body, body
        code, body = post(at, "/act/unblock", {"target": "--help"})  # an item id, not build-loop's --help
    assert code == 200 and "Usage:" not in body and "refused" in body, body
    with Journal(measured.journal_path("plan"), readonly=True) as journal:
        assert journal.count("pass") == passes + 1


@pytest.mark.landlock
def test_a_turns_tokens_so_far_are_read_from_the_gateways_own_record(measured_landlock: Workspace) -> None:
    """While a turn runs, its calls are only in the turn's calls.jsonl: the items page counts them from there, as
    the gateway counted them (here after the turn, when the journal's figure is there to compare)."""
    from shared.dashboard.query import _calls_so_far, call_tokens
    from tests.helpers.model_server import ModelServer, Script, Write
    from tests.redteam.test_gateway_promises import CANARY, ITEM_FILE, configure, once

    ws = measured_landlock
    with ModelServer(Script.of(Write({ITEM_FILE: "broken"}), root=str(ws.code), api_key=CANARY)) as server:
        configure(ws, server, agent_args="--calls 3")
        record = once(ws)
    so_far = _calls_so_far(ws.role_dir("build") / "iterations" / str(record["n"]) / "calls.jsonl")
    assert len(so_far) >= 1 and sum(call_tokens(call) for call in so_far) == record["tokens"] > 0, (so_far, record)
