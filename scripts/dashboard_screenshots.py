"""Screenshots of every dashboard page for docs/dashboard/, from a real run of the bundled example.

    python scripts/dashboard_screenshots.py [--out docs/dashboard]

The example runs with its SIMULATED agent (a scripted stand-in for an LLM; no model is reachable here) for a few
turns, then one item is blocked by an agent that changes nothing, so the overview leads with it and the items page has
something to unblock; a real `banach serve` serves it and Debian's chromium, driven by Playwright, takes the pictures.
Then a canon edit with two mistakes is submitted from the editor (canon-refused.png: the refusal above the kept text),
and the loops run until certified (items-certified.png: what was kept, by whom and when).
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
PAGES = {"overview": "/", "items": "/items", "iterations": "/iterations", "iteration": "/iterations/3",
         "canon": "/canon", "spend": "/spend", "journal": "/journal"}
MISTAKES = "\n## TK-7: a new requirement\npriority: high\ncolour: red\n\nIt says so.\n"  # two problems, named at once


def run(*args: str) -> None:
    modules = {"banach": "shared", "build-loop": "build_loop", "plan-loop": "plan_loop"}
    subprocess.run([sys.executable, "-m", modules[args[0]], *args[1:]], capture_output=True, text=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "dashboard")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="banach-screenshots-"))
    ws = folder / "ws"
    try:
        run("banach", "init", "--example", str(ws))
        config = ws / "banach.toml"
        config.write_text(config.read_text().replace("max_attempts = 4", "max_attempts = 2\nrounds = 1"))
        run("banach", "run", "-w", str(ws), "--until-certified", "--max-turns", "5")
        stalling = f"{sys.executable} {ROOT / 'tests' / 'helpers' / 'agents' / 'no_change.py'}"
        for _ in range(2):
            run("build-loop", "once", "-w", str(ws), "--agent-command", stalling)
        run("plan-loop", "once", "-w", str(ws))
        server = subprocess.Popen([sys.executable, "-m", "shared", "serve", "-w", str(ws), "--port", "0"],
                                  stderr=subprocess.PIPE, text=True)
        try:
            assert server.stderr is not None
            found = re.search(r"(http://[^/]+)/\?token=(\S+)", server.stderr.readline())
            assert found
            base, token = found.group(1), found.group(2)
            time.sleep(1.0)
            args.out.mkdir(parents=True, exist_ok=True)
            with sync_playwright() as driver:
                browser = driver.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                                 args=FLAGS)
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(f"{base}/?token={token}")
                for name, path in PAGES.items():
                    page.goto(base + path)
                    page.wait_for_load_state("networkidle")
                    page.screenshot(path=str(args.out / f"{name}.png"), full_page=name in ("overview", "items"))
                    print(f"{args.out / f'{name}.png'}: {path}")
                page.goto(base + "/")
                page.screenshot(path=str(args.out / "overview-blocked.png"))  # the first screen, as a person sees it
                page.goto(base + "/canon?edit=requirements/textkit.md")
                editor = page.locator("form.editor textarea")
                editor.fill(editor.input_value() + MISTAKES)
                page.locator("form.editor button[type=submit]").click()
                page.wait_for_load_state("networkidle")
                page.evaluate("document.getElementById('refusal').scrollIntoView()")
                page.screenshot(path=str(args.out / "canon-refused.png"))
                run("build-loop", "unblock", "-w", str(ws))
                run("banach", "run", "-w", str(ws), "--until-certified", "--max-turns", "20")
                page.goto(base + "/items")
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(args.out / "items-certified.png"), full_page=True)
                print(f"{args.out}: overview-blocked.png, canon-refused.png, items-certified.png")
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=15)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
