"""A sample's page in real headless Chromium (issue 19), on a laptop and on a tablet: where
the tube is, with the way to its box; checking it out after confirming, and back in by
picking the box from the suggestions; a final status asked for before it is set; and no
page wider than the window."""
from __future__ import annotations

import json
from typing import Any
from urllib.request import Request, urlopen

import pytest
from playwright.sync_api import Dialog, Page, expect

from tests.browser.conftest import BROWSER_MARKS, USERNAME, create_entities, log_in
from tests.conftest import PASSWORD, basic_header

pytestmark = BROWSER_MARKS

VIEWPORTS = {"laptop": (1366, 900), "tablet": (768, 1024)}
PATH = "Lab 2 / Freezer -80 / Rack 3 / Box 12"


def post_json(base_url: str, path: str, body: Any) -> Any:
    """``POST`` a JSON body to the live server as carol; the JSON answer."""
    request = Request(f"{base_url}{path}", data=json.dumps(body).encode(), method="POST",
                      headers={"Content-Type": "application/json",
                               **basic_header(USERNAME, PASSWORD)})
    with urlopen(request, timeout=10) as response:
        assert response.status in (200, 201)
        return json.load(response)


def make_box(base_url: str) -> dict[str, Any]:
    """Lab 2 / Freezer -80 / Rack 3 / Box 12, an 8 × 12 grid with the barcode BOX-12."""
    *_, box = post_json(base_url, "/api/storage/location", [
        {"id": "#lab", "name": "Lab 2"},
        {"id": "#freezer", "name": "Freezer -80", "parentID": "#lab"},
        {"id": "#rack", "name": "Rack 3", "parentID": "#freezer"},
        {"name": "Box 12", "parentID": "#rack", "rows": 8, "columns": 12,
         "barcode": "BOX-12"}])
    return box


def no_horizontal_scroll(page: Page) -> None:
    assert page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def answer(page: Page, accept: bool) -> list[str]:
    """Answer the next dialog; the list receives its message."""
    messages: list[str] = []

    def handle(dialog: Dialog) -> None:
        messages.append(dialog.message)
        if accept:
            dialog.accept()
        else:
            dialog.dismiss()

    page.once("dialog", handle)
    return messages


@pytest.mark.parametrize("device", VIEWPORTS)
def test_stored_in_check_out_and_back_in(page: Page, live_server: str, device: str) -> None:
    page.set_viewport_size(dict(zip(("width", "height"), VIEWPORTS[device], strict=True)))
    box = make_box(live_server)
    sample, = create_entities(live_server, {"eClass": "Sample", "name": "Lysate 7",
                                            "amount": 1.5, "unit": "mL"})
    post_json(live_server, f"/api/storage/location/{box['id']}/checkin",
              [{"eClass": "Sample", "id": sample["id"], "position": "B7"}])
    log_in(page, live_server)
    url = f"{live_server}/entities/Sample/{sample['id']}"
    page.goto(url)
    expect(page.locator("#stored-in")).to_have_text(f"Stored in {PATH} · B7")
    link = page.locator("#stored-in-location")
    expect(link).to_have_attribute("href", f"/storage/locations/{box['id']}?slot=B7")
    expect(page.locator("#print-label")).to_have_attribute(
        "href", f"/storage/labels?ids={sample['id']}")
    no_horizontal_scroll(page)

    # Dismissed, the check-out does not happen; accepted, it does and the page says so.
    asked = answer(page, accept=False)
    page.click("#check-out")
    expect(page.locator("#stored-in")).to_have_text(f"Stored in {PATH} · B7")
    assert asked == [f"Check Sample {sample['id']} out of {PATH} · B7?"]
    answer(page, accept=True)
    page.click("#check-out")
    expect(page.locator(".flash-success")).to_have_text(
        f"Sample {sample['id']} checked out of {PATH} · B7.")
    expect(page.locator("#stored-in")).to_have_text("Not stored")
    assert page.url == f"{url}#storage"
    no_horizontal_scroll(page)

    # Back in: pick the box among the suggestions, choose a slot.
    expect(page.locator("#checkin-form legend")).to_have_text("Check in")
    # htmx binds the field's input trigger when the page has loaded: typed before, the
    # suggestions were never asked for (the test failed so once in a full run).
    page.wait_for_load_state("load")
    page.fill("#field-locationID", "Box 1")
    page.locator("#field-locationID-suggest button", has_text="Box 12").click()
    expect(page.locator("#field-locationID")).to_have_value(box["id"])
    page.fill("#checkin-position", "H12")
    no_horizontal_scroll(page)
    page.click("#check-in")
    expect(page.locator(".flash-success")).to_have_text(
        f"Sample {sample['id']} checked in to {PATH} · H12.")
    expect(page.locator("#stored-in")).to_have_text(f"Stored in {PATH} · H12")

    # The link opens the box.
    page.click("#stored-in-location")
    page.wait_for_url(f"{live_server}/storage/locations/{box['id']}?slot=H12")
    expect(page.locator('td[data-slot="H12"] a')).to_contain_text("Lysate 7")

    # The table of samples and the search results say where it is too.
    page.goto("/entities/Sample")
    place = page.locator("#entity-table tbody td").nth(5)
    expect(place).to_have_text(f"Rack 3 / Box 12 · H12 {box['id']}")  # a list's short form
    expect(place.locator("a")).to_have_attribute("title", f"{PATH} · H12")
    no_horizontal_scroll(page)
    page.goto("/search?q=Lysate&mode=like")
    expect(page.locator(".hit-place")).to_have_text(f"Stored in {PATH} · H12 {box['id']}")
    no_horizontal_scroll(page)


@pytest.mark.parametrize("device", VIEWPORTS)
def test_a_final_status_is_set_only_once_confirmed(page: Page, live_server: str,
                                                   device: str) -> None:
    page.set_viewport_size(dict(zip(("width", "height"), VIEWPORTS[device], strict=True)))
    sample, = create_entities(live_server, {"eClass": "Sample", "name": "Old stock"})
    log_in(page, live_server)
    page.goto(f"/entities/Sample/{sample['id']}")
    no_horizontal_scroll(page)

    asked = answer(page, accept=False)
    page.click("#status-to-Discarded")
    expect(page.locator("#entity-status")).to_have_text("Initial")
    assert asked == [f"Move Sample {sample['id']} to Discarded? Discarded ends its work."]
    # A move that is not final asks nothing.
    page.click("#status-to-InProgress")
    expect(page.locator("#entity-status")).to_have_text("In progress")
    answer(page, accept=True)
    page.click("#status-to-Discarded")
    expect(page.locator(".flash-success")).to_have_text(
        f"Sample {sample['id']} is now Discarded.")
    expect(page.locator("#entity-status")).to_have_text("Discarded")
    expect(page.locator("#status-form")).to_have_count(0)
