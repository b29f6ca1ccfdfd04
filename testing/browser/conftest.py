"""The browser tier: the report opened in Debian's Chromium, driven by playwright. Where
either is missing these tests are skipped, and the run says why (testing/conftest.py)."""

import os

import pytest

from support import CHROMIUM


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM) and not os.environ.get("CI"):
        pytest.skip("Debian chromium is not installed (scripts/test.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api") if not os.environ.get("CI") else __import__("playwright.sync_api").sync_api
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()
