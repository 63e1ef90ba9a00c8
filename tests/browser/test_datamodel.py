"""The data-model diff and its Sync button in real headless Chromium (issue 14): the admin
sees what the database lacks, syncs, reads the report, and the diff is empty after it."""
from __future__ import annotations

from flask import Flask
from playwright.sync_api import Page, expect

from labapp.db import db
from tests.browser.conftest import BROWSER_MARKS
from tests.conftest import ADMIN_PASSWORD
from tests.helpers.browser import log_in_as

pytestmark = BROWSER_MARKS


def test_diff_then_sync_from_the_page(page: Page, live_app: Flask, live_server: str) -> None:
    with live_app.app_context(), db.engine.begin() as connection:
        connection.exec_driver_sql('DROP VIEW "v_Plate"')
        connection.exec_driver_sql("DELETE FROM sequence WHERE id = 'Note'")
    log_in_as(page, live_server, "admin", ADMIN_PASSWORD)
    page.click("#datamodel-link")
    expect(page.locator("#class-Sample svg.status-diagram")).to_be_visible()
    page.click("#diff-link")
    expect(page.locator("#diff-heading")).to_have_text("Differences")
    expect(page.locator(".diff-missingViews")).to_contain_text("v_Plate")
    expect(page.locator(".diff-missingSequences")).to_contain_text("Note")

    page.click("#sync-button")
    expect(page.locator("#report-views")).to_have_text("Plate")
    expect(page.locator("#report-sequences")).to_have_text("Note")
    expect(page.locator("#diff-heading")).to_have_text("No differences")

    page.click("#sync-button")
    expect(page.locator("#sync-nothing")).to_be_visible()
