"""Dashboards and the bell in real headless Chromium (issue 12): carol builds a dashboard
with a chart and a saved list and shares it with a department; its member sees it, an
outsider does not; a Request assigned to the member reaches them through the bell. The home
dashboard passes axe-core at desktop and tablet widths, each chart with its table (issue 21
§4)."""
from __future__ import annotations

import re

import pytest
from flask import Flask
from playwright.sync_api import Browser, Page, expect

from labapp.db import transaction
from labapp.users.service import create_user
from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS, create_entities, log_in, watched_page
from tests.conftest import PASSWORD
from tests.helpers.browser import live_api, log_in_as, seed
from tests.helpers.dashboards import grid_widget

pytestmark = BROWSER_MARKS


def _people(live_app: Flask, live_server: str) -> tuple[str, str]:
    """Physics (with its member dan) and Chemistry (with olga, the outsider)."""
    physics, chemistry = seed(live_server, {"eClass": "Department", "name": "Physics"},
                              {"eClass": "Department", "name": "Chemistry"})
    with live_app.app_context(), transaction():
        create_user(username="dan", name="Dan Physicist", department_id=physics["id"],
                    password=PASSWORD, created_by="admin")
        create_user(username="olga", name="Olga Outsider", department_id=chemistry["id"],
                    password=PASSWORD, created_by="admin")
    return physics["id"], chemistry["id"]


def test_build_share_and_see_a_dashboard(page: Page, live_app: Flask, live_server: str,
                                         browser: Browser) -> None:
    physics, _ = _people(live_app, live_server)
    create_entities(live_server, {"eClass": "Sample", "name": "Shared broth",
                                  "departmentID": "DEP00001", "projectID": None},
                    {"eClass": "Sample", "name": "Second broth"})
    log_in(page, live_server)
    expect(page.locator("#dashboard-title")).to_have_text("My dashboard")
    expect(page.locator("#widget-0 .widget-body")).not_to_contain_text("Loading")

    page.click("#new-dashboard")
    page.fill("#field-name", "Broth watch")
    page.select_option("#add-kind", "status-counts")
    page.click("#add-widget")
    page.select_option("#w0-eclass", "Sample")
    page.locator("#w0-dialog").get_by_role("button", name="Done").click()
    page.click("#save-dashboard")
    expect(page.locator("#dashboard-title")).to_have_text("Broth watch")
    expect(page.locator("#widget-0 svg")).to_be_visible()

    page.click("#edit-dashboard")
    page.select_option("#add-kind", "saved-list")
    page.click("#add-widget")
    page.select_option("#w1-eclass", "Sample")
    page.fill("#w1-columns", "id, name")
    page.locator("#w1-dialog").get_by_role("button", name="Done").click()
    page.fill("#share-departmentIDs-search", "Phys")
    page.get_by_role("option", name=re.compile(physics)).click()
    page.click("#save-dashboard")
    expect(page.locator(".flash-success")).to_have_text("Dashboard saved.")
    board_url = page.url
    expect(page.locator("#widget-0 svg")).to_have_attribute(
        "aria-label", re.compile(r"^Bar chart: Initial 2, In progress 0"))
    expect(page.locator("#widget-0 table th[scope=row]").first).to_have_text("Initial")
    expect(page.locator("#widget-1 table.saved-list")).to_contain_text("Shared broth")

    with watched_page(browser, base_url=live_server) as dan:
        log_in_as(dan, live_server, "dan", PASSWORD)
        dan.goto(board_url)
        expect(dan.locator("#dashboard-title")).to_have_text("Broth watch")
        expect(dan.locator("#edit-dashboard")).to_have_count(0)
        # dan may not read DEP00001's samples: the same widgets show him none of them.
        expect(dan.locator("#widget-1 table.saved-list")).to_contain_text("No Sample matches")
        expect(dan.locator("#widget-0 table th[scope=row]").first).to_have_text("Initial")

    with watched_page(browser, base_url=live_server) as olga:
        log_in_as(olga, live_server, "olga", PASSWORD)
        response = olga.goto(board_url)
        assert response is not None and response.status == 404
        olga.goto("/")
        olga.locator("#dashboard-picker summary").click()
        expect(olga.locator("#dashboard-list")).not_to_contain_text("Broth watch")


def test_request_assignment_reaches_the_bell(page: Page, live_app: Flask,
                                             live_server: str) -> None:
    _people(live_app, live_server)
    (request,) = create_entities(live_server, {
        "eClass": "Request", "name": "Calibrate the pH meter", "assigneeID": "dan"})
    log_in_as(page, live_server, "dan", PASSWORD)
    expect(page.locator("#bell-count")).to_have_text("1")
    page.click("#bell")
    page.wait_for_url(f"{live_server}/notifications")
    page.get_by_role("link", name="Calibrate the pH meter").click()
    page.wait_for_url(f"{live_server}/entities/Request/{request['id']}")
    expect(page.locator("#bell-count")).to_have_text("0")


@pytest.mark.parametrize("width", [1366, 768])
def test_home_dashboard_is_accessible(page: Page, live_server: str, width: int) -> None:
    create_entities(live_server, {"eClass": "Location", "id": "FRZ-1", "name": "Freezer 1",
                                  "capacity": 10})
    create_entities(live_server, *({"eClass": "Sample", "name": f"Broth {n}",
                                    "locationID": "FRZ-1"} for n in range(3)))
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server)
    (home,) = live_api(live_server, "GET", "/api/dashboard")
    live_api(live_server, "PUT", f"/api/dashboard/{home['id']}", {**home, "widgets": [
        grid_widget("status-counts", 0, 0, 6, {"eClass": "Sample"}),
        grid_widget("created-per-week", 6, 0, 6, {"eClass": "Sample", "weeks": 26}),
        grid_widget("saved-list", 0, 4, 6, {"eClass": "Sample", "columns": ["id", "name"]}),
        grid_widget("storage-usage", 6, 4, 6, {}),
        grid_widget("note", 0, 8, 12, {"markdown": "See the [samples](/entities/Sample) list."}),
    ]})
    page.goto("/")
    for index in range(5):
        expect(page.locator(f"#widget-{index} .widget-body")).not_to_contain_text("Loading")
    for index, rows in ((0, None), (1, 26), (3, 1)):
        chart = page.locator(f"#widget-{index} svg[role=img]")
        expect(chart).to_have_attribute("aria-label", re.compile(r"chart"))
        table = page.locator(f"#widget-{index} table.chart-table tbody tr")
        expect(table).to_have_count(rows) if rows else expect(table.first).to_be_attached()
    expect(page.locator("#widget-3 table.chart-table td").first).to_have_text("3")
    assert page.evaluate("document.documentElement.scrollWidth <= "
                         "document.documentElement.clientWidth"), page.evaluate(
        "[...document.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right > "
        "document.documentElement.clientWidth).map(e => e.tagName + '#' + e.id + '.' + "
        "e.className + ' ' + e.getBoundingClientRect().right).slice(0, 15)")
    assert_no_serious_violations(page)
