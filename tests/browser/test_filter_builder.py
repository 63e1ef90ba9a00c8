"""The filter builder of the entity list in real Chromium (issue 21 §2), at a desktop and a
tablet width: conditions chosen by label, operator and value (a status from the list, a
relative date range, a reference picked by name) filter the table and show as chips; a chip
is removed from the keyboard; the $filter they make stays readable; axe finds nothing
serious and nothing scrolls sideways."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Page, expect

from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS, create_entities, log_in

pytestmark = BROWSER_MARKS


def _in_days(days: int) -> str:
    return (datetime.now(UTC).date() + timedelta(days=days)).isoformat()


def _no_horizontal_scroll(page: Page) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= "
                              "document.documentElement.clientWidth"))


def _add(page: Page, field: str, operator: str) -> None:
    page.select_option("#builder-field", label=field)
    page.select_option("#builder-op", label=operator)


@pytest.mark.parametrize("width", [1366, 768])
def test_conditions_filter_the_table_and_show_as_chips(page: Page, live_server: str,
                                                       width: int) -> None:
    page.set_viewport_size({"width": width, "height": 1000})
    box, shelf = create_entities(live_server, {"eClass": "Location", "name": "Box 12"},
                                 {"eClass": "Location", "name": "Shelf 3"})
    create_entities(
        live_server,
        {"eClass": "Sample", "name": "Soon in box", "status": "Completed",
         "expiryDate": _in_days(5), "locationID": box["id"]},
        {"eClass": "Sample", "name": "Later in box", "status": "Completed",
         "expiryDate": _in_days(40), "locationID": box["id"]},
        {"eClass": "Sample", "name": "Soon, not done", "status": "Initial",
         "expiryDate": _in_days(3), "locationID": box["id"]},
        {"eClass": "Sample", "name": "Soon on shelf", "status": "Completed",
         "expiryDate": _in_days(2), "locationID": shelf["id"]})
    log_in(page, live_server)
    page.goto("/entities/Sample?columns=name")
    rows = page.locator("#entity-table tbody tr")
    chips = page.locator("#filter-chips .chip-label")
    expect(rows).to_have_count(4)

    _add(page, "Status", "is")
    expect(page.locator("#builder-value")).to_be_hidden()
    page.select_option("#builder-choice", "Completed")
    page.click("#add-condition")
    expect(chips).to_have_text(["Status is Completed"])
    expect(rows).to_have_count(3)
    expect(page.locator("#builder-field")).to_be_focused()

    _add(page, "Expiry date", "within the next … days")
    expect(page.locator("#builder-value-label")).to_have_text("Number of days")
    page.fill("#builder-value", "14")
    page.press("#builder-value", "Enter")  # Enter adds the condition too
    expect(chips).to_have_text(["Status is Completed", "Expiry date within the next 14 days"])
    expect(rows).to_have_count(2)

    _add(page, "Location", "is")
    page.fill("#builder-value", "Box")
    pick = page.locator("#builder-suggest button")
    expect(pick).to_have_text([f"Box 12 ({box['id']})"])
    page.press("#builder-value", "ArrowDown")
    expect(pick).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#builder-value")).to_have_value("Box 12")
    page.click("#add-condition")
    expect(chips).to_have_text(["Status is Completed", "Expiry date within the next 14 days",
                                "Location is Box 12"])
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text("Soon in box")
    assert _no_horizontal_scroll(page)
    assert_no_serious_violations(page)

    # Remove the status chip from the keyboard: the others stay, focus stays in the chips.
    remove = page.get_by_role("link", name="Remove condition: Status is Completed")
    remove.focus()
    page.keyboard.press("Enter")
    expect(chips).to_have_text(["Expiry date within the next 14 days", "Location is Box 12"])
    expect(rows).to_have_count(2)
    expect(page.get_by_role("link", name="Remove condition: Expiry date within the next "
                                         "14 days")).to_be_focused()

    # The $filter they make, readable and editable for those who want it.
    page.click("#filter-raw summary")
    expect(page.locator("#filter")).to_have_value(
        "expiryDate ge date(now()) and expiryDate le date(now()) add duration'P14D' and "
        f"locationID eq '{box['id']}'")
    assert "filter=expiryDate" in page.url, "the filter is in the address"
    assert _no_horizontal_scroll(page)
    assert_no_serious_violations(page)


def test_a_custom_expression_is_one_chip_and_a_bad_value_is_explained(
        page: Page, live_server: str) -> None:
    create_entities(live_server, {"eClass": "Sample", "name": "O'Brien's", "amount": 3},
                    {"eClass": "Sample", "name": "Other", "amount": 9})
    log_in(page, live_server)
    page.goto("/entities/Sample?filter=amount lt 5 or name eq 'x'")
    expect(page.locator("#filter-chips .chip-label")).to_have_text(
        ["Custom expression: (amount lt 5 or name eq 'x')"])
    expect(page.locator("#filter-raw")).to_have_attribute("open", "")

    _add(page, "Name", "contains")
    page.fill("#builder-value", "O'B")
    page.click("#add-condition")
    expect(page.locator("#filter-chips .chip-label")).to_have_text(
        ["Name contains “O'B”", "Custom expression: (amount lt 5 or name eq 'x')"])
    expect(page.locator("#entity-table tbody tr")).to_have_count(1)
    expect(page.locator("#filter")).to_have_value(
        "(amount lt 5 or name eq 'x') and contains(name,'O''B')")

    _add(page, "Amount", "> more than")
    page.click("#add-condition")
    expect(page.locator("#builder-error")).to_have_text("Amount: give a value to compare with.")
    expect(page.locator("#builder-field")).to_have_value("amount")
    expect(page.locator("#entity-table tbody tr")).to_have_count(1)
    assert_no_serious_violations(page)
