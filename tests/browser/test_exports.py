"""The exports page in real headless Chromium (issue 14): the administrator saves an export,
watches it run, and finds it listed with a working download link."""
from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.conftest import BROWSER_MARKS, create_entities
from tests.conftest import ADMIN_PASSWORD
from tests.helpers.browser import log_in_as

pytestmark = BROWSER_MARKS


def test_save_an_export_and_download_it(page: Page, live_server: str) -> None:
    create_entities(live_server, {"eClass": "Sample", "name": "Exported broth"})
    log_in_as(page, live_server, "admin", ADMIN_PASSWORD)
    page.goto("/admin")
    page.click("#admin-exports a")
    expect(page.locator("h1")).to_have_text("Exports")
    expect(page.locator("#no-exports")).to_be_visible()

    page.click("#save-export")
    link = page.locator("#export-list .download-export")
    expect(link).to_have_count(1, timeout=30_000)  # htmx polls the progress until listed
    expect(page.locator("#export-progress")).to_contain_text("Saved labapp-export-")
    with page.expect_download() as download_info:
        link.click()
    download = download_info.value
    assert download.suggested_filename.startswith("labapp-export-")
    with open(download.path(), "rb") as content:
        assert content.read(2) == b"\x1f\x8b"
