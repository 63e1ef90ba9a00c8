"""The dashboard editor in real headless Chromium (issue 21 §4): widgets arranged on the grid
by dragging and by the keyboard, each kind's settings in a dialog, sharing through a
searchable picker, a refused filter shown at its widget, and a confirmed delete; at 1366 and
768 px, without horizontal scroll and clean for axe-core."""
from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from playwright.sync_api import Browser, Dialog, Page, expect

from labapp.db import transaction
from labapp.users.service import create_user
from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS, log_in, watched_page
from tests.conftest import PASSWORD
from tests.helpers.browser import live_api, seed

pytestmark = BROWSER_MARKS


def _no_horizontal_scroll(page: Page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= "
                         "document.documentElement.clientWidth")


def _pitch(page: Page) -> dict[str, float]:
    """The editor grid's column and row pitch (cell plus gap) in CSS pixels."""
    pitch: dict[str, float] = page.evaluate("""() => {
        const grid = document.getElementById('editor-grid');
        const style = getComputedStyle(grid);
        const gap = parseFloat(style.columnGap), rowGap = parseFloat(style.rowGap);
        const width = (grid.getBoundingClientRect().width - 11 * gap) / 12;
        return {col: width + gap, row: parseFloat(style.gridTemplateRows) + rowGap};
    }""")
    return pitch


def _drag(page: Page, selector: str, cols: int, rows: int) -> None:
    """Drag the element by ``cols`` columns and ``rows`` rows of the grid with the mouse."""
    pitch = _pitch(page)
    page.locator("#editor-grid").evaluate("grid => grid.scrollIntoView({block: 'start'})")
    box = page.locator(selector).bounding_box()
    assert box is not None
    x, y = box["x"] + min(box["width"] / 2, 8), box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + cols * pitch["col"], y + rows * pitch["row"], steps=8)
    page.mouse.up()


def _add(page: Page, kind: str, number: int) -> Any:
    """Add a widget of ``kind``: its settings dialog opens; returns the dialog."""
    page.select_option("#add-kind", kind)
    page.click("#add-widget")
    dialog = page.locator(f"#w{number}-dialog")
    expect(dialog).to_be_visible()
    return dialog


def _fields(dialog: Any) -> list[str]:
    names: list[str] = dialog.locator("input, select, textarea").evaluate_all(
        "elements => elements.map(element => element.name.replace(/^w\\d+-/, ''))")
    return names


@pytest.mark.parametrize("width", [1366, 768])
def test_arrange_configure_share_save_and_delete(page: Page, live_app: Flask, live_server: str,
                                                 width: int) -> None:
    (physics,) = seed(live_server, {"eClass": "Department", "name": "Physics"})
    with live_app.app_context(), transaction():
        create_user(username="bob", name="Bob Builder", department_id=physics["id"],
                    password=PASSWORD, created_by="admin")
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server)
    page.goto("/dashboards/new")
    page.fill("#field-name", "Lab board")

    chart = _add(page, "status-counts", 0)
    assert _fields(chart) == ["header", "eclass"]
    page.select_option("#w0-eclass", "Sample")
    chart.get_by_role("button", name="Done").click()
    expect(chart).to_be_hidden()

    listing = _add(page, "saved-list", 1)
    assert _fields(listing) == ["header", "eclass", "filter", "columns", "orderby", "size"]
    page.fill("#w1-header", "Expiring")
    page.select_option("#w1-eclass", "Sample")
    page.fill("#w1-filter", "colour eq 'red'")
    listing.get_by_role("button", name="Done").click()
    expect(page.locator("#w1-title")).to_have_text("Expiring")
    expect(page.locator("#w1-y")).to_have_value("4")

    # Drag "Expiring" from below the chart to its right; resize the chart two rows taller
    # (and try to make it narrower than a chart may be).
    _drag(page, "#w1-title", 6, -4)
    expect(page.locator("#w1-x")).to_have_value("6")
    expect(page.locator("#w1-y")).to_have_value("0")
    expect(page.locator("#grid-status")).to_have_text("Expiring moved to column 7, row 1")
    _drag(page, "#w0-card .resize-handle", -3, 2)
    expect(page.locator("#w0-rows")).to_have_value("6")
    expect(page.locator("#w0-cols")).to_have_value("6")

    # The keyboard: the chart one row down, "Expiring" one column narrower.
    page.focus("#w0-title")
    page.keyboard.press("ArrowDown")
    expect(page.locator("#grid-status")).to_have_text(
        "Entities by status moved to column 1, row 2")
    page.focus("#w1-title")
    page.keyboard.press("Shift+ArrowLeft")
    expect(page.locator("#grid-status")).to_have_text(
        "Expiring resized to 5 columns by 4 rows")

    # Share with bob through the searchable picker: type, choose, see the chip.
    page.fill("#share-userIDs-search", "bui")
    page.get_by_role("option", name="Bob Builder (bob)").click()
    expect(page.locator("#shares .chip")).to_have_text(re.compile(r"Bob Builder \(bob\)"))
    expect(page.get_by_role("button", name="Remove Bob Builder (bob)")).to_be_visible()
    _no_horizontal_scroll(page)
    assert_no_serious_violations(page)

    # The refused filter is shown at its widget, whose settings open on the answer.
    page.click("#save-dashboard")
    errors = page.locator("#w1-card .widget-errors").first
    expect(errors).to_contain_text("Widget 'Expiring': filter:")
    expect(page.locator("#w1-card")).to_have_class(re.compile(r"\bhas-error\b"))
    expect(page.locator("#w1-dialog")).to_be_visible()
    expect(page.locator("#form-error")).not_to_contain_text("widgets.1")
    assert_no_serious_violations(page)
    page.fill("#w1-filter", "status eq 'Initial'")
    page.locator("#w1-dialog").get_by_role("button", name="Done").click()
    page.click("#save-dashboard")
    expect(page.locator(".flash-success")).to_have_text("Dashboard saved.")

    (saved,) = [board for board in live_api(live_server, "GET", "/api/dashboard")
                if board["name"] == "Lab board"]
    assert [w["gridster"] for w in saved["widgets"]] == [
        {"x": 0, "y": 1, "cols": 6, "rows": 6}, {"x": 6, "y": 0, "cols": 5, "rows": 4}]
    assert saved["widgets"][1]["config"]["filter"] == "status eq 'Initial'"
    assert saved["shares"]["userIDs"] == ["bob"]

    # Removing a widget is undoable; deleting the dashboard is red and asks first.
    page.click("#edit-dashboard")
    page.locator("#w0-card").get_by_role("button", name="Remove").click()
    expect(page.locator("#w0-card")).to_be_hidden()
    page.click("#undo-remove")
    expect(page.locator("#w0-card")).to_be_visible()
    expect(page.locator("#w0-title")).to_be_focused()
    delete = page.locator("#delete-dashboard")
    assert delete.evaluate("button => getComputedStyle(button).backgroundColor") == (
        "rgb(180, 35, 24)")
    asked: list[str] = []

    def refuse(dialog: Dialog) -> None:
        asked.append(dialog.message)
        dialog.dismiss()
    page.once("dialog", refuse)
    delete.click()
    assert asked == ["Delete the dashboard “Lab board”? This cannot be undone."]
    assert "Lab board" in [b["name"] for b in live_api(live_server, "GET", "/api/dashboard")]
    page.once("dialog", lambda dialog: dialog.accept())
    delete.click()
    expect(page.locator(".flash-success")).to_have_text("Dashboard deleted.")
    assert "Lab board" not in [b["name"] for b in live_api(live_server, "GET", "/api/dashboard")]


def test_the_editor_works_without_javascript(browser: Browser, live_server: str) -> None:
    with watched_page(browser, base_url=live_server, java_script_enabled=False) as page:
        page.set_viewport_size({"width": 768, "height": 900})
        log_in(page, live_server)
        page.goto("/dashboards/new")
        page.fill("#field-name", "Plain board")
        page.select_option("#add-kind", "recent-activity")
        page.click("#add-widget")
        expect(page.locator("#w0-size")).to_be_visible()
        page.fill("#w0-header", "Latest")
        page.fill("#w0-size", "5")
        page.fill("#w0-x", "2")
        page.select_option("#add-kind", "note")
        page.click("#add-widget")
        page.fill("#w1-markdown", "Going away")
        page.check("#w1-remove")
        page.select_option("#share-userRoles", ["ADMIN"])
        page.press("#field-name", "Enter")
        expect(page.locator(".flash-success")).to_have_text("Dashboard saved.")
        _no_horizontal_scroll(page)
    (saved,) = [board for board in live_api(live_server, "GET", "/api/dashboard")
                if board["name"] == "Plain board"]
    assert [(w["header"], w["config"], w["gridster"]) for w in saved["widgets"]] == [
        ("Latest", {"limit": 5}, {"x": 2, "y": 0, "cols": 6, "rows": 4})]
    assert saved["shares"]["userRoles"] == ["ADMIN"]
