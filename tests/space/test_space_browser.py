"""The leaderboard page in headless Chromium (Debian's `chromium`): every tab renders, with a table and no error.

Screenshots go to the test's temporary folder, or to $SCITASTE_SCREENSHOT_DIR when set (never into git).
"""

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium package (apt-get install chromium)")

TABS = ("Leaderboard", "Compare", "Plots", "Submit", "About")


def test_every_tab_renders(space, tmp_path):
    from playwright.sync_api import sync_playwright

    url, _ = space
    out = Path(os.environ.get("SCITASTE_SCREENSHOT_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--disable-quic"])
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.goto(url, wait_until="networkidle")
            page.get_by_text("synthetic-example-model", exact=True).filter(visible=True).first.wait_for(timeout=30000)
            assert page.locator("table").count() > 0
            for tab in TABS:
                page.get_by_role("tab", name=tab).click()
                page.wait_for_timeout(800)
                page.screenshot(path=str(out / f"space-{tab.lower()}.png"), full_page=True)
                assert page.locator(".toast-body.error, .error-message").count() == 0, f"error on tab {tab}"
            page.get_by_role("tab", name="About").click()
            assert page.get_by_text("What SciTaste-Bench measures").is_visible()
        finally:
            browser.close()
    assert all((out / f"space-{t.lower()}.png").stat().st_size > 10_000 for t in TABS)
