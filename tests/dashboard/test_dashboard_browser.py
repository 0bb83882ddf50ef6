"""The dashboard in a real browser: Debian's chromium, driven by Playwright for Python (no browser download)."""
from __future__ import annotations

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
