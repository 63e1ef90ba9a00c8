"""The Data feeds page in real headless Chromium (issue 13): carol finds the Sample feed, its
columns and a preview of only her rows, copies the feed URL, makes a token for her BI tool and
the feed answers that token (fixtures and skip rules in ``conftest.py``)."""
from __future__ import annotations

import json
from urllib.request import Request, urlopen

from playwright.sync_api import Browser, expect

from tests.browser.conftest import BROWSER_MARKS, USERNAME, create_entities, log_in, watched_page
from tests.conftest import ADMIN_PASSWORD, basic_header

pytestmark = BROWSER_MARKS


def test_find_preview_copy_and_connect_a_feed(live_server: str, browser: Browser) -> None:
    create_entities(live_server, {"eClass": "Sample", "name": "Carol's broth"})
    create_entities(live_server, {"eClass": "Department", "name": "Elsewhere"},
                    username="admin", password=ADMIN_PASSWORD)
    with watched_page(browser, base_url=live_server,
                      permissions=["clipboard-read", "clipboard-write"]) as page:
        log_in(page, live_server)
        page.click("#feeds-link")
        page.wait_for_url(f"{live_server}/feeds")
        feed_url = f"{live_server}/odata/Sample"
        expect(page.locator("#feed-url-Sample")).to_have_value(feed_url)
        expect(page.locator("#feed-SampleOverview")).to_be_visible()

        page.locator("#feed-Sample summary").click()
        expect(page.locator("#feed-Sample .feed-columns")).to_contain_text("dateTaken Date")

        page.click("#preview-button-Sample")
        table = page.locator("#preview-table-Sample")
        expect(table).to_contain_text("Carol's broth")
        expect(table.locator("tbody tr")).to_have_count(1)

        page.click("button[data-copy='feed-url-Sample']")
        expect(page.locator("[data-copy-status='feed-url-Sample']")).to_have_text("Copied.")
        assert page.evaluate("navigator.clipboard.readText()") == feed_url

        page.click("#feed-pat-button")
        token = page.locator("#feed-pat-value")
        expect(token).to_contain_text("PAT")
        secret = token.inner_text().strip()

    request = Request(f"{feed_url}?$select=name", headers=basic_header(USERNAME, secret))
    with urlopen(request, timeout=10) as response:
        assert response.headers["OData-Version"] == "4.0"
        assert [row["name"] for row in json.load(response)["value"]] == ["Carol's broth"]
