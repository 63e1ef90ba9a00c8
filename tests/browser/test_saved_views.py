"""Saved views (issue 21 §2, §3) in real headless Chromium, on a laptop and a tablet: a
filtered list saved from its Views menu, reopened from the menu, added to a dashboard as a
saved list whose CSV and XLSX downloads (read back with the csv module and openpyxl) hold
the view's rows; the pages pass axe-core and never scroll sideways."""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from openpyxl import load_workbook
from playwright.sync_api import Locator, Page, expect

from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS, create_entities, log_in

pytestmark = BROWSER_MARKS


def no_sideways_scroll(page: Page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= "
                         "document.documentElement.clientWidth")


def downloaded(page: Page, link: Locator) -> bytes:
    with page.expect_download() as download_info:
        link.click()
    return Path(download_info.value.path()).read_bytes()


@pytest.mark.parametrize("width", [1366, 768])
def test_save_reopen_add_to_a_dashboard_and_download(page: Page, live_server: str,
                                                     width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    create_entities(live_server,
                    {"eClass": "Sample", "name": "Broth A", "amount": 180},
                    {"eClass": "Sample", "name": "Broth B", "amount": 20},
                    {"eClass": "Sample", "name": "Plasmid", "amount": 1})
    log_in(page, live_server)  # the home page makes carol's starter dashboard

    # A filtered, sorted list saved from its Views menu.
    page.goto("/entities/Sample?columns=name,amount&orderby=amount+desc")
    page.click("#filter-raw summary")
    page.fill("#filter", "amount ge 5")
    page.click("#table-query button[type=submit]")
    expect(page.locator("#entity-table tbody tr")).to_have_count(2)
    page.hover("#saved-views-menu summary")
    page.click("#saved-views-menu summary")
    # Opened, the menu follows the table's query (htmx asked for it with the form's values).
    expect(page.locator("#save-view")).to_have_attribute(
        "href", re.compile(r"filter=amount\+ge\+5"))
    assert_no_serious_violations(page)
    no_sideways_scroll(page)
    page.click("#save-view")
    expect(page.locator("#view-filter")).to_have_value("amount ge 5")
    page.fill("#view-name", "Big broths")
    # Shared through the searchable picker, by keyboard: type, arrow down, Enter.
    page.fill("#share-userRoles-search", "adm")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.locator("#view-shares .chip")).to_have_text(re.compile("ADMIN"))
    assert_no_serious_violations(page)
    page.click("#save-view-button")
    expect(page.locator("#view-title")).to_have_text("Big broths")
    expect(page.locator("#view-shares .chip")).to_have_text(re.compile("ADMIN"))
    assert_no_serious_violations(page)
    no_sideways_scroll(page)

    # Reopened from the menu of the unfiltered list.
    page.goto("/entities/Sample")
    expect(page.locator("#entity-table tbody tr")).to_have_count(3)
    # By keyboard: the menu's summary opens it, its links follow in the tab order.
    summary = page.locator("#saved-views-menu summary")
    with page.expect_response(lambda response: "/saved-views/menu/" in response.url):
        summary.focus()
    expect(summary).not_to_have_class(re.compile("htmx-request"))
    page.keyboard.press("Enter")
    opener = page.locator("#saved-views-menu .saved-view-open", has_text="Big broths")
    expect(opener).to_be_visible()
    page.keyboard.press("Tab")
    expect(opener).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#entity-table tbody tr")).to_have_count(2)
    names = page.locator("#entity-table tbody td:nth-child(2)").all_text_contents()
    assert [name.strip() for name in names] == ["Broth A", "Broth B"]

    # Added to the dashboard: a saved list at the first free place, with its downloads.
    page.click("#saved-views-menu summary")
    page.locator("#saved-views-menu a", has_text="About").first.click()
    expect(page.locator("#dashboard-choice")).to_have_count(1)
    page.click("#add-to-dashboard-button")
    widget = page.locator("#dashboard-grid .widget", has_text="Big broths")
    expect(widget.locator("table.saved-list tbody tr")).to_have_count(2)
    expect(widget.locator("table.saved-list")).to_contain_text("Broth A")
    assert_no_serious_violations(page)
    no_sideways_scroll(page)

    text = downloaded(page, widget.locator("a.export-csv")).decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert sorted(rows[0]) == ["Amount", "ID", "Name"]
    name, amount = rows[0].index("Name"), rows[0].index("Amount")
    assert [row[name] for row in rows[1:]] == ["Broth A", "Broth B"]
    workbook = load_workbook(io.BytesIO(downloaded(page, widget.locator("a.export-xlsx"))),
                             read_only=True)
    try:
        sheet = [list(row) for row in workbook["Sample"].iter_rows(values_only=True)]
    finally:
        workbook.close()
    assert sheet[0] == rows[0]
    assert [(row[name], row[amount]) for row in sheet[1:]] == [("Broth A", 180),
                                                                ("Broth B", 20)]
