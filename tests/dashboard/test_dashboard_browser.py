"""The dashboard in a real browser: Debian's chromium, driven by Playwright for Python (no browser download)."""
from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.dashboard import served
from tests.helpers.waiting import wait_until
from tests.helpers.workspaces import agent, cli

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Without the background-networking flags chromium keeps calling Google's hosts, which a closed machine refuses.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]

pytestmark = [pytest.mark.slow]


@pytest.fixture
def browser() -> Iterator[object]:
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the [test] extra")
    if not shutil.which("chromium"):
        pytest.skip("needs Debian's chromium: apt-get install chromium (scripts/install_clis.py does it as root)")
    with playwright_api.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()


def test_the_pages_render_follow_the_loops_live_and_unblock_is_journaled(measured: Workspace, browser: object) -> None:
    ws = measured
    text = (ws.root / "banach.toml").read_text().replace("max_attempts = 4", "max_attempts = 1\nrounds = 1")
    (ws.root / "banach.toml").write_text(text)
    with served(ws) as at:
        page = browser.new_page()  # type: ignore[attr-defined]
        page.goto(at.login_url)
        assert "token" not in page.url  # the printed URL became a cookie
        assert page.locator(".card").first.is_visible()
        for path, words in (("/items", "fix_plan of plan pass"), ("/iterations", "turn(s)"), ("/canon", "Canon v1"),
                            ("/spend", "model calls"), ("/journal", "Journals: intact")):
            page.goto(at.base + path)
            assert words in page.locator("main").inner_text(), path

        # a build turn appears on the open page without a reload
        page.goto(at.base + "/iterations")
        page.evaluate("window.stayed = 'this page was not reloaded'")
        ran = cli("build-loop", "once", "--workspace", str(ws.root), "--agent-command", agent("no_change.py"))
        assert ran.returncode in (0, 1), ran.stderr
        page.wait_for_selector('tr[data-n="1"]', timeout=15_000)
        assert page.evaluate("window.stayed") == "this page was not reloaded"

        # the plot gains its point: a plan pass redraws it in place
        page.goto(at.base + "/")
        page.evaluate("window.stayed = 'still'")
        before = page.get_attribute("#plot", "src")
        assert cli("plan-loop", "once", "--workspace", str(ws.root)).returncode in (0, 1)
        page.wait_for_function(f"document.getElementById('plot').getAttribute('src') !== {before!r}", timeout=15_000)
        assert page.evaluate("window.stayed") == "still"
        svg = page.request.get(at.base + page.get_attribute("#plot", "src")).text()
        assert svg.startswith("<?xml") and "<svg" in svg

        # unblock from the items page
        page.goto(at.base + "/items")
        page.locator("form.act button", has_text="unblock").first.click()
        page.wait_for_load_state()
        assert "done" in page.content(), page.content()[:3000]
        assert "unblocked" in page.locator("pre.acted").inner_text()

        # a browser without the token is refused
        stranger = browser.new_context().new_page()  # type: ignore[attr-defined]
        response = stranger.goto(at.base + "/")
        assert response is not None and response.status == 403
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        assert journal.rows("item.unblocked")
    with Journal(ws.state / "serve" / "journal.db", readonly=True) as journal:
        assert [row.data["action"] for row in journal.rows("dashboard.action")] == ["unblock"]


def test_banach_up_starts_the_dashboard_as_a_fourth_program(tmp_path: Path) -> None:
    import socket
    import urllib.request

    from shared.app import supervisor
    from tests.helpers.workspaces import example

    with socket.socket() as probe:  # a port free now, for banach.toml
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ws = Workspace.open(example(tmp_path, extra=f"[serve]\nenabled = true\nport = {port}\n").root)
    up = cli("banach", "up", "--workspace", str(ws.root))
    try:
        assert up.returncode == 0, up.stderr
        url = next(line.split(": ", 1)[1] for line in up.stdout.splitlines() if line.startswith("dashboard: "))
        assert url.startswith(f"http://127.0.0.1:{port}/?token=")
        token = url.split("token=", 1)[1]

        def answers() -> bool:
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Authorization": f"Bearer {token}"})
                return urllib.request.urlopen(request, timeout=10).status == 200
            except OSError:
                return False

        assert wait_until(answers, [ws.supervisor_dir], 30)
        states = {p.role: p.state for p in supervisor.states(ws)}
        assert states == {"spec": "RUNNING", "plan": "RUNNING", "build": "RUNNING", "serve": "RUNNING"}, states
    finally:
        supervisor.down(ws)


def shots(tmp_path: Path) -> Path:
    """Where the pictures go: BANACH_SCREENSHOTS (scripts/dashboard_screenshots.py sets docs/dashboard), else tmp."""
    import os

    folder = Path(os.environ.get("BANACH_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_the_first_screen_leads_with_a_blocked_item_its_cause_and_its_unblock(measured: Workspace, browser: object,
                                                                             tmp_path: Path) -> None:
    """Issue 43: the overview said CERTIFICATE no, Q -, MONITOR insufficient; the blocked item was grey small print
    under the plot, and its unblock button on another page."""
    ws = measured
    text = (ws.root / "banach.toml").read_text().replace("max_attempts = 4", "max_attempts = 1\nrounds = 1")
    (ws.root / "banach.toml").write_text(text)
    ran = cli("build-loop", "once", "--workspace", str(ws.root), "--agent-command", agent("no_change.py"))
    assert ran.returncode == 0, ran.stderr
    with served(ws) as at:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
        page.goto(at.login_url)
        need = page.locator("#waiting li.need-blocked").first
        assert need.is_visible()
        said = need.inner_text()
        assert "TK-1 is blocked after 1 turn in 1 round" in said, said
        assert "why: tests/test_slug.py:1: ModuleNotFoundError: No module named 'textkit.slug'" in said, said
        assert f"build-loop unblock TK-1 -w {ws.root}" in said and "may spend up to 1 more turn;" in said, said
        first, cards = page.locator("#waiting").bounding_box(), page.locator(".cards").bounding_box()
        assert first is not None and cards is not None and first["y"] < cards["y"]  # before the tiles
        assert first["y"] + first["height"] < 1000  # on the first screen
        page.screenshot(path=str(shots(tmp_path) / "overview-blocked.png"))
        need.locator("form.act button", has_text="unblock TK-1").click()
        page.wait_for_load_state()
        assert "unblock" in page.locator("h2").first.inner_text() and "done" in page.locator("h2").first.inner_text()
        assert "unblocked TK-1 (item TK-1." in page.locator("pre.acted").inner_text()
        page.goto(at.base + "/")
        assert page.locator("#waiting li.need-blocked").count() == 0


def test_a_refused_canon_text_stays_in_the_editor_under_the_refusal(measured: Workspace, browser: object,
                                                                   tmp_path: Path) -> None:
    """Issue 43: the canon editor dropped the text when spec-loop refused it (the terminal kept it)."""
    with served(measured) as at:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
        page.goto(at.login_url)
        page.goto(at.base + "/canon?edit=requirements/textkit.md")
        editor = page.locator("form.editor textarea")
        typed = editor.input_value() + "\n## TK-7: my new requirement\npriority: high\ncolour: red\n\nIt says so.\n"
        editor.fill(typed)
        page.locator("form.editor button[type=submit]").click()
        page.wait_for_load_state()
        refusal = page.locator("#refusal")
        assert refusal.is_visible() and "spec-loop refused this text" in refusal.inner_text()
        said = page.locator("pre.refused-message").inner_text()
        assert "priority must be a whole number" in said and "unknown field 'colour'" in said, said  # both at once
        assert page.locator("form.editor textarea").input_value() == typed
        box, editor_box = refusal.bounding_box(), page.locator("form.editor textarea").bounding_box()
        assert box is not None and editor_box is not None and box["y"] < editor_box["y"]
        page.locator("#refusal").scroll_into_view_if_needed()
        page.screenshot(path=str(shots(tmp_path) / "canon-refused.png"))
    assert "TK-7" not in (measured.canon / "requirements" / "textkit.md").read_text()


def test_after_certification_the_items_page_lists_what_was_kept_by_whom_and_when(measured: Workspace, browser: object,
                                                                                tmp_path: Path) -> None:
    """Issue 43: the Items page was empty once certified."""
    ran = cli("banach", "run", "--until-certified", "--workspace", str(measured.root), timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    with served(measured) as at:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
        page.goto(at.login_url)
        page.goto(at.base + "/items")
        assert "Nothing is open" in page.locator("main").inner_text()
        rows = page.locator("table.kept tr[data-n]")
        assert rows.count() >= 5
        kept = page.locator("table.kept").inner_text()
        for requirement in ("TK-1", "TK-2", "TK-3", "TK-4", "TK-5"):
            assert requirement in kept, kept
        assert "SIMULATED" in kept and "failing " in kept
        assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", kept)
        page.screenshot(path=str(shots(tmp_path) / "items-certified.png"), full_page=True)
