"""The Sign-ins page under Admin in real headless Chromium, at 1366 and 768 px: an
administrator finds a failed attempt in the log, filters it with the keyboard alone and reads
how long attempts are kept; the page passes axe-core and never scrolls sideways."""
from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS
from tests.conftest import ADMIN_PASSWORD
from tests.helpers.browser import log_in_as

pytestmark = BROWSER_MARKS


@pytest.mark.parametrize("width", (1366, 768))
def test_an_administrator_finds_a_failed_attempt(page: Page, live_server: str,
                                                 width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/login")
    page.fill("#username", "admin")
    page.fill("#password", "not the password")
    page.click("#login-form button[type=submit]")
    expect(page.locator("#login-form")).to_be_visible()
    log_in_as(page, live_server, "admin", ADMIN_PASSWORD)

    page.click("#admin-link")
    page.get_by_role("link", name="Sign-ins", exact=True).click()
    expect(page.locator("h1")).to_have_text("Sign-ins")
    expect(page.locator("#sign-in-count")).to_contain_text("Attempts are kept 365 days.")
    expect(page.locator("#sign-in-table tbody tr")).to_have_count(2)
    assert_no_serious_violations(page)
    assert page.evaluate("document.documentElement.scrollWidth <= "
                         "document.documentElement.clientWidth")

    page.locator("#filter-outcome").focus()
    page.keyboard.press("ArrowDown")  # all → succeeded
    page.keyboard.press("ArrowDown")  # → failed
    expect(page.locator("#filter-outcome")).to_have_value("failed")
    page.keyboard.press("Tab")
    expect(page.locator("#sign-in-filter button[type=submit]")).to_be_focused()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    rows = page.locator("#sign-in-table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("wrong_password")
    expect(page.locator("#sign-in-count")).to_contain_text("1 event.")
    assert_no_serious_violations(page)
    assert page.evaluate("document.documentElement.scrollWidth <= "
                         "document.documentElement.clientWidth")
