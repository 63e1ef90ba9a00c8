"""What a lab member sees of an entity in real headless Chromium, set to British English in
Los Angeles: references by name leading to their entity, numbers with their unit, dates and
timestamps in the viewer's locale and time zone (also after htmx swaps a table), empty
fields folded away (fixtures and skip rules in ``conftest.py``)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import BROWSER_MARKS, create_entities, log_in, watched_page

pytestmark = BROWSER_MARKS


@pytest.fixture
def viewer(live_server: str, browser: Browser) -> Iterator[Page]:
    """A page of a browser in en-GB, in Los Angeles (UTC-8 in early March 2024)."""
    with watched_page(browser, base_url=live_server, locale="en-GB",
                      timezone_id="America/Los_Angeles") as page:
        yield page


def test_names_numbers_and_local_times(viewer: Page, live_server: str) -> None:
    experiment, sample, run = create_entities(
        live_server,
        {"eClass": "Experiment", "id": "#exp", "name": "Growth curve"},
        {"eClass": "Sample", "name": "Broth", "experimentID": "#exp",
         "amount": 38.14494730136748, "unit": "mL", "dateTaken": "2024-03-05"},
        {"eClass": "Fermentation", "name": "Run 1", "experimentID": "#exp",
         "startTime": "2024-03-06T03:30:00Z", "workingVolume": 0.1 + 0.2})
    log_in(viewer, live_server)
    viewer.goto(f"/entities/Sample/{sample['id']}")
    fields = viewer.locator("#fields dl")

    # The experiment by name, its id beside in grey, leading to it.
    reference = fields.locator("dd", has=viewer.get_by_role("link", name="Growth curve"))
    expect(reference).to_have_text(f"Growth curve {experiment['id']}")
    expect(reference.locator(".ref-id")).to_have_css("color", "rgb(95, 107, 122)")
    expect(fields.locator("dt")).to_contain_text(["Department", "Experiment", "Amount"])
    expect(fields).not_to_contain_text("Experiment ID")
    expect(fields.locator("dd", has_text="mL")).to_have_text("38.1449 mL")
    # A calendar day stays that day in any time zone.
    expect(fields.locator("dd time[datetime='2024-03-05']")).to_have_text("5 Mar 2024")
    # Empty fields are folded away until asked for.
    empty = viewer.locator("#empty-fields")
    expect(empty.locator("p")).to_be_hidden()
    empty.locator("summary").click()
    expect(empty.locator("p")).to_contain_text("Barcode")

    reference.get_by_role("link", name="Growth curve").click()
    viewer.wait_for_url(f"{live_server}/entities/Experiment/{experiment['id']}")
    expect(viewer.locator("#entity-heading")).to_contain_text("Growth curve")

    # 03:30 UTC on the 6th is the evening of the 5th in Los Angeles; the UTC value is kept
    # in the tooltip.
    viewer.goto(f"/entities/Fermentation/{run['id']}")
    start = viewer.locator("#fields time[datetime='2024-03-06T03:30:00Z']")
    expect(start).to_have_text("5 Mar 2024, 19:30")
    expect(start).to_have_attribute("title", "2024-03-06T03:30:00Z")
    expect(viewer.locator("#fields dd", has_text="0.3")).to_have_text("0.3")

    # In a table too, also once htmx has swapped it.
    viewer.goto("/entities/Fermentation?columns=name,experimentID,startTime,workingVolume")
    row = viewer.locator("#entity-table tbody tr").first
    expect(row.locator("td")).to_have_text(
        [run["id"], "Run 1", f"Growth curve {experiment['id']}", "5 Mar 2024, 19:30", "0.3"])
    viewer.evaluate("window.sameDocument = true")
    viewer.get_by_role("link", name="Start time").click()
    expect(viewer.locator("#entity-table th[aria-sort]")).to_contain_text("Start time")
    expect(row.locator("time")).to_have_text("5 Mar 2024, 19:30")
    assert viewer.evaluate("window.sameDocument") is True, "htmx swapped the table"
