"""Storage in real headless Chromium (issue 11): scan-driven check-in into a grid box, a
refused collision shown in red, a box moved to another rack, and the label sheet (inline
SVG under the strict CSP)."""
from __future__ import annotations

import json
from urllib.request import Request, urlopen

from playwright.sync_api import Page, expect

from tests.browser.conftest import BROWSER_MARKS, USERNAME, create_entities, log_in
from tests.conftest import PASSWORD, basic_header

pytestmark = BROWSER_MARKS


def create_locations(base_url: str, *items: dict) -> list[dict]:
    request = Request(f"{base_url}/api/storage/location", data=json.dumps(list(items)).encode(),
                      method="POST", headers={"Content-Type": "application/json",
                                              **basic_header(USERNAME, PASSWORD)})
    with urlopen(request, timeout=10) as response:
        assert response.status == 201
        return json.load(response)


def scan(page: Page, code: str) -> None:
    """Type a code into the scan field and press Enter, as a USB scanner does; wait for the
    answer to be listed."""
    before = page.locator("#scan-results li").count()
    page.fill("#scan-code", code)
    page.press("#scan-code", "Enter")
    expect(page.locator("#scan-results li")).to_have_count(before + 1)


def test_scan_to_store_into_a_grid_box_and_a_refusal_in_red(page: Page,
                                                           live_server: str) -> None:
    box, = create_locations(live_server, {"name": "Box 5", "rows": 2, "columns": 2,
                                          "barcode": "BOX-5"})
    samples = create_entities(live_server, *({"eClass": "Sample", "name": f"Tube {n}",
                                              "barcode": f"TUBE-{n}"} for n in range(5)))
    log_in(page, live_server)
    page.get_by_role("link", name="Storage", exact=True).click()
    page.click("#bench-link")
    expect(page.locator("#scan-code")).to_be_focused()
    scan(page, "BOX-5")
    expect(page.locator("#scan-target-name")).to_have_text("Box 5")
    for number, slot in zip(range(4), ("A1", "A2", "B1", "B2"), strict=True):
        scan(page, f"TUBE-{number}")
        newest = page.locator("#scan-results li").first
        expect(newest).to_have_class("scan-ok")
        expect(newest).to_contain_text(f"slot {slot}")
        expect(page.locator("#scan-code")).to_have_value("")
    scan(page, "TUBE-4")
    refused = page.locator("#scan-results li").first
    expect(refused).to_have_class("scan-error")
    expect(refused).to_contain_text("does not fit")
    assert refused.evaluate("e => getComputedStyle(e).color") == "rgb(180, 35, 24)"

    page.goto(f"/storage/locations/{box['id']}")
    expect(page.locator("td.slot-taken")).to_have_count(4)
    expect(page.locator('td[data-slot="B2"] a')).to_have_text("Tube 3")
    assert samples[4]["id"] not in page.content()


def _check_in(base_url: str, location_id: str, items: list[dict]) -> None:
    request = Request(f"{base_url}/api/storage/location/{location_id}/checkin",
                      data=json.dumps(items).encode(), method="POST",
                      headers={"Content-Type": "application/json",
                               **basic_header(USERNAME, PASSWORD)})
    with urlopen(request, timeout=10) as response:
        assert response.status == 200


def test_a_slot_taken_meanwhile_is_refused_in_red(page: Page, live_server: str) -> None:
    box, = create_locations(live_server, {"name": "Box 7", "rows": 2, "columns": 2})
    first, second, third = create_entities(live_server, {"eClass": "Sample", "name": "First"},
                                           {"eClass": "Sample", "name": "Second"},
                                           {"eClass": "Sample", "name": "Third"})
    log_in(page, live_server)
    page.goto(f"/storage/locations/{box['id']}")
    page.fill("#slot-A2", first["id"])
    page.press("#slot-A2", "Enter")
    expect(page.locator('td[data-slot="A2"] a')).to_have_text("First")
    # Someone else takes B1 while this page still shows it empty.
    _check_in(live_server, box["id"], [{"eClass": "Sample", "id": second["id"],
                                        "position": "B1"}])
    page.fill("#slot-B1", third["id"])
    page.press("#slot-B1", "Enter")
    error = page.locator("#storage-error")
    expect(error).to_contain_text("slot B1")
    assert error.evaluate("e => getComputedStyle(e).color") == "rgb(180, 35, 24)"
    expect(page.locator('td[data-slot="B1"] a')).to_have_text("Second")
    expect(page.locator("#contents-table")).not_to_contain_text(third["id"])


def test_move_a_box_to_another_rack(page: Page, live_server: str) -> None:
    rack1, rack2, box = create_locations(
        live_server, {"id": "#r1", "name": "Rack 1"}, {"name": "Rack 2"},
        {"name": "Box 9", "parentID": "#r1", "rows": 2, "columns": 2})
    samples = create_entities(live_server, {"eClass": "Sample"}, {"eClass": "Sample"})
    _check_in(live_server, box["id"], [{"eClass": "Sample", "id": s["id"]} for s in samples])
    log_in(page, live_server)
    page.goto(f"/storage/locations/{box['id']}")
    page.click("#move-link")
    page.select_option("#move-parent", rack2["id"])
    page.click("#move-next")
    expect(page.locator("#move-confirmation")).to_contain_text("Rack 2")
    expect(page.locator("#move-items")).to_have_text("2")
    page.click("#move-confirm")
    page.wait_for_url(f"{live_server}/storage/locations/{box['id']}")
    expect(page.locator("#location-summary")).to_contain_text("Rack 2 / Box 9")
    expect(page.locator("td.slot-taken")).to_have_count(2)
    page.goto("/storage")
    rack_two = page.locator(f'li[data-location="{rack2["id"]}"]')
    expect(rack_two.locator(f'li[data-location="{box["id"]}"]')).to_have_count(1)
    assert rack1["id"] != rack2["id"]


def test_label_sheet_draws_codes_under_the_strict_policy(page: Page,
                                                        live_server: str) -> None:
    sample, = create_entities(live_server, {"eClass": "Sample", "name": "Serum",
                                            "barcode": "SER-1"})
    log_in(page, live_server)
    page.goto(f"/storage/labels?ids={sample['id']}")
    label = page.locator(f'[data-label="{sample["id"]}"]')
    expect(label.locator("svg")).to_have_count(2)
    assert label.locator(".label-barcode svg").bounding_box()["width"] > 50
    page.emulate_media(media="print")
    expect(page.locator(".topbar")).to_be_hidden()
    expect(label).to_be_visible()
