"""Things a lab reads (issue 32 §5) in real headless Chromium at 1366 and 768 px: the Sample
list and every list-type dashboard widget keep whole each column they choose for their width
(no cell clipped, no sideways scroll of the page, the table or the widget), name what they
leave out, and show a place by its last two parts; chart text stays at least 12 px; a chart
saved narrower than its kind is drawn at its minimum or as its table; the dashboard's
headings keep their order; the editor opens no band of empty grid above Save."""
from __future__ import annotations

from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Locator, Page, expect

from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS, USERNAME, create_entities, log_in
from tests.helpers.browser import live_api
from tests.helpers.dashboards import grid_widget

pytestmark = BROWSER_MARKS

WIDTHS = (1366, 768)
PATH = "Lab 2 North Wing / Freezer -80 Thermo / Rack 3 / Box 12"
LONG_NAME = "Plasmid_pUC19_miniprep_2026-11-03_batchA_glycerol_stock"

# The cells of a table that are drawn but not wholly inside the table's box, or whose
# content overflows them; and whether the box itself scrolls sideways.
CUT_CELLS = """wrap => {
    const box = wrap.getBoundingClientRect();
    const cut = [...wrap.querySelectorAll('th, td')]
        .filter(cell => getComputedStyle(cell).display !== 'none')
        .filter(cell => {
            const edge = cell.getBoundingClientRect();
            return edge.left < box.left - 0.5 || edge.right > box.right + 0.5
                || cell.scrollWidth > cell.clientWidth + 1;
        })
        .map(cell => cell.textContent.trim().slice(0, 40));
    return {cut, scrolls: wrap.scrollWidth > wrap.clientWidth + 1};
}"""
SHOWN_HEADERS = """table => [...table.querySelectorAll('thead th')]
    .filter(th => getComputedStyle(th).display !== 'none')
    .map(th => th.textContent.trim().replace(/ [▲▼]$/, ''))"""
# The smallest size on screen, in CSS pixels, of any text of the page's charts.
SMALLEST_CHART_TEXT = """() => Math.min(...[...document.querySelectorAll('svg.chart-svg text')]
    .map(text => text.getScreenCTM().a * parseFloat(getComputedStyle(text).fontSize)))"""
# The width each chart on the page is drawn for, in page order.
CHART_WIDTHS = """() => [...document.querySelectorAll('svg.chart-svg')]
    .map(svg => svg.viewBox.baseVal.width)"""


def no_sideways_scroll(page: Page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= "
                         "document.documentElement.clientWidth"), page.evaluate(
        "[...document.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right > "
        "document.documentElement.clientWidth).map(e => e.tagName + '#' + e.id + '.' + "
        "e.className).slice(0, 10)")


def assert_columns_whole(wrap: Locator) -> list[str]:
    """Every column the table shows is wholly visible and the table does not scroll
    sideways; returns the headers shown."""
    measured: dict[str, Any] = wrap.evaluate(CUT_CELLS)
    assert measured == {"cut": [], "scrolls": False}, measured
    shown: list[str] = wrap.locator("table").evaluate(SHOWN_HEADERS)
    return shown


def _stock(live_server: str) -> dict[str, Any]:
    """A deep storage path, and samples with long unbreakable names and codes, an expired
    one, an empty one: what made the list cut its expiry column at 768 px."""
    *_, box = create_entities(
        live_server, {"eClass": "Location", "id": "#lab", "name": "Lab 2 North Wing"},
        {"eClass": "Location", "id": "#freezer", "name": "Freezer -80 Thermo",
         "parentID": "#lab"},
        {"eClass": "Location", "id": "#rack", "name": "Rack 3", "parentID": "#freezer"},
        {"eClass": "Location", "name": "Box 12", "parentID": "#rack", "rows": 8,
         "columns": 12})
    create_entities(
        live_server,
        {"eClass": "Sample", "name": LONG_NAME, "barcode": "LAB2026110300012345",
         "amount": 0, "unit": "µL", "expiryDate": "2025-01-01", "locationID": box["id"],
         "position": "H12"},
        *({"eClass": "Sample", "name": f"E. coli DH5α glycerol stock clone {n:03d}",
           "barcode": f"BC-2026-{n:06d}", "amount": 180.5, "unit": "µL",
           "expiryDate": "2030-03-01", "locationID": box["id"]} for n in range(4)))
    return box


@pytest.mark.parametrize("width", WIDTHS)
def test_the_sample_list_keeps_each_column_it_shows_whole(page: Page, live_server: str,
                                                          width: int) -> None:
    box = _stock(live_server)
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server)
    page.goto("/entities/Sample?orderby=expiryDate%20asc")
    shown = assert_columns_whole(page.locator("#entity-browser .table-wrap"))
    assert shown[:2] == ["ID", "Name"] and "Expiry date" in shown and "Location" in shown
    left_out = [name for name in ("Barcode", "Status", "Amount") if name not in shown]
    note = page.locator("#table-left-out")
    if left_out:
        expect(note).to_have_text(f"Not shown at this width: {', '.join(left_out)}.",
                                  use_inner_text=True)
    else:
        expect(note).to_be_hidden()
    assert bool(left_out) is (width == 768), shown
    row = page.locator("#entity-table tbody tr", has_text=LONG_NAME)
    place = row.locator(f'a[href*="/storage/locations/{box["id"]}"]')
    expect(place).to_have_text("Rack 3 / Box 12 · H12")
    expect(place).to_have_attribute("title", f"{PATH} · H12")
    expect(row.locator(".mark")).to_have_text(["empty", "expired"])
    no_sideways_scroll(page)
    assert_no_serious_violations(page)


def _lists_dashboard(live_server: str) -> dict[str, Any]:
    """carol's dashboard of every list-type widget, at the widths of the issue's report (a
    saved list five columns wide), and two charts saved narrower than their kind: one with
    room beside it, one without."""
    _stock(live_server)
    create_entities(live_server, {"eClass": "Request", "name": "Thaw plates for the "
                                  "overnight_incubation_run_2026", "assigneeID": USERNAME,
                                  "dueDate": "2025-06-01", "priority": "Urgent"})
    rule = live_api(live_server, "POST", "/api/alert-rule", {
        "name": "Running low", "eClass": "Sample", "filter": "amount le 5",
        "recipients": {"userIDs": [USERNAME], "departmentIDs": [], "projectIDs": [],
                       "userRoles": []},
        "channels": ["bell"], "cadence": "immediate", "active": True})
    columns = ["name", "barcode", "status", "amount", "locationID", "expiryDate"]
    expiring = grid_widget("saved-list", 0, 0, 5, {"eClass": "Sample", "columns": columns,
                                                    "orderby": "expiryDate asc"})
    body = {"name": "Lab lists", "description": None, "shares": {}, "widgets": [
        {**expiring, "header": "Expiring"},
        grid_widget("alerts", 5, 0, 7, {"ruleID": rule["id"]}),
        grid_widget("my-requests", 0, 4, 4, {}),
        grid_widget("recent-activity", 4, 4, 8, {"limit": 5}),
        grid_widget("status-counts", 0, 8, 3, {"eClass": "Sample"}),
        grid_widget("note", 3, 8, 9, {"markdown": "Beside the narrow chart."}),
        grid_widget("created-per-week", 9, 30, 2, {"eClass": "Sample", "weeks": 26})]}
    board: dict[str, Any] = live_api(live_server, "POST", "/api/dashboard", body)
    return board


@pytest.mark.parametrize("width", WIDTHS)
def test_list_widgets_keep_each_column_whole_and_charts_stay_readable(
        page: Page, live_server: str, width: int) -> None:
    log_in(page, live_server)
    board = _lists_dashboard(live_server)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"/dashboards/{board['id']}")
    for index in range(7):
        expect(page.locator(f"#widget-{index} .widget-body")).not_to_contain_text("Loading")
    expect(page.locator("#widget-0 table.saved-list")).to_contain_text(LONG_NAME)
    expect(page.locator("#widget-1 table.alerts-list")).to_contain_text(LONG_NAME)

    expiring = assert_columns_whole(page.locator("#widget-0 .table-wrap"))
    assert expiring[0] == "Name" and "Expiry date" in expiring, expiring  # sorted by it
    left_out = [label for label in ("Barcode", "Status", "Amount", "Location")
                if label not in expiring]
    assert left_out, "five columns of 12 have no room for six"
    expect(page.locator("#widget-0 .fit-note")).to_have_text(
        f"Not shown at this width: {', '.join(left_out)}.", use_inner_text=True)
    assert assert_columns_whole(page.locator("#widget-1 .table-wrap"))[0] == "Name"
    for index in range(7):
        widget = page.locator(f"#widget-{index}")
        assert widget.evaluate("w => w.scrollWidth <= w.clientWidth + 1"), index
    expect(page.locator("#widget-2 li").first).to_contain_text("Thaw plates")
    expect(page.locator("#widget-2 li").first).to_contain_text("Initial · Urgent")
    expect(page.locator("#widget-3 li").first).to_contain_text("by Carol Chemist")
    expect(page.locator("#widget-3")).to_contain_text("Checked in")
    expect(page.locator("#widget-3")).not_to_contain_text("CheckedIn")

    # Saved 3 columns wide with no room beside it, the status chart is its table; saved 2
    # wide and 30 rows down, the per-week chart is drawn 6 wide right below the others.
    expect(page.locator("#widget-4 .chart-numbers table")).to_be_visible()
    expect(page.locator("#widget-4 svg")).to_have_count(0)
    expect(page.locator("#widget-6")).to_have_class("card widget gx-6 gw-6 gy-12 gh-4")
    expect(page.locator("#widget-6 svg.chart-svg")).to_be_visible()
    assert page.evaluate(SMALLEST_CHART_TEXT) >= 11.99
    assert Axe().run(page, options={"runOnly": ["heading-order"]}).response["violations"] == []
    no_sideways_scroll(page)
    assert_no_serious_violations(page)


def test_the_charts_redraw_at_their_new_width_when_the_window_narrows(
        page: Page, live_server: str) -> None:
    log_in(page, live_server)
    (home,) = live_api(live_server, "GET", "/api/dashboard")
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto("/")
    chart = page.locator("#widget-2 svg.chart-svg")
    expect(chart).to_be_visible()
    wide = chart.evaluate("svg => svg.viewBox.baseVal.width")
    widths = page.evaluate(CHART_WIDTHS)
    page.set_viewport_size({"width": 768, "height": 900})
    expect(chart).not_to_have_attribute("viewBox", f"0 0 {int(wide)} 220")
    # Each chart is fetched again at its new width, one after another: measure once all are.
    page.wait_for_function(f"wide => ({CHART_WIDTHS})().every((width, i) => width !== wide[i])",
                           arg=widths)
    assert page.evaluate(SMALLEST_CHART_TEXT) >= 11.99
    assert home["widgets"][2]["plugin"]["plugin"] == "status-counts"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_editor_opens_no_band_of_empty_grid_above_save(page: Page, live_server: str,
                                                           width: int) -> None:
    log_in(page, live_server)
    body = {"name": "Far apart", "description": None, "shares": {}, "widgets": [
        grid_widget("note", 0, 0, 6, {"markdown": "top"}),
        grid_widget("status-counts", 6, 0, 3, {"eClass": "Sample"}),
        grid_widget("note", 0, 30, 12, {"markdown": "far below"})]}
    board = live_api(live_server, "POST", "/api/dashboard", body)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"/dashboards/{board['id']}/edit")
    expect(page.locator("#w2-y")).to_have_value("4")  # closed up under the others
    expect(page.locator("#w1-cols")).to_have_value("6")  # the chart at its minimum
    expect(page.locator("#w1-widened")).to_be_visible()
    empty = """() => {
        const grid = document.getElementById('editor-grid');
        const cards = [...grid.querySelectorAll('.editor-widget:not([hidden])')];
        return grid.getBoundingClientRect().bottom
            - Math.max(...cards.map(card => card.getBoundingClientRect().bottom));
    }"""
    assert page.evaluate(empty) < 2
    # Keys cannot push the lowest card below the others, nor can a drag far down.
    page.focus("#w2-title")
    for _ in range(5):
        page.keyboard.press("ArrowDown")
    expect(page.locator("#w2-y")).to_have_value("4")
    page.focus("#w0-title")
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    expect(page.locator("#w0-y")).to_have_value("3")
    expect(page.locator("#w2-y")).to_have_value("7")
    assert page.evaluate(empty) < 2
    no_sideways_scroll(page)
    assert_no_serious_violations(page)
    page.click("#save-dashboard")
    expect(page.locator(".flash-success")).to_have_text("Dashboard saved.")
    (saved,) = [item for item in live_api(live_server, "GET", "/api/dashboard")
                if item["name"] == "Far apart"]
    assert [item["gridster"] for item in saved["widgets"]] == [
        {"x": 0, "y": 3, "cols": 6, "rows": 4}, {"x": 6, "y": 0, "cols": 6, "rows": 4},
        {"x": 0, "y": 7, "cols": 12, "rows": 4}]
