"""Storage in real headless Chromium (issues 11 and 19): scan-driven check-in into a grid
box, a refused collision shown in red, a box moved to another rack, the label sheet (inline
SVG under the strict CSP), box grids that fit a tablet with every column, slots chosen by
keyboard or named in the address, check-out and "Store anyway" confirmations, and axe-core
finding nothing serious on the storage pages."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS, create_entities, log_in
from tests.conftest import ADMIN_PASSWORD
from tests.helpers.browser import DESKTOP, TABLET, check_in, create_locations, live_post

pytestmark = BROWSER_MARKS


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
    expect(refused).to_have_css("color", "rgb(180, 35, 24)")

    page.goto(f"/storage/locations/{box['id']}")
    expect(page.locator("td.slot-taken")).to_have_count(4)
    expect(page.locator('td[data-slot="B2"] a')).to_have_text("TUBE-3")
    expect(page.locator('td[data-slot="B2"] a')).to_have_attribute(
        "title", f"B2: Tube 3 (Sample {samples[3]['id']}, TUBE-3)")
    assert samples[4]["id"] not in page.content()


def store_in_slot(page: Page, position: str, code: str) -> None:
    """Tap a free slot of the box grid, then type a code into the scan field and press
    Enter."""
    page.click(f'[data-choose-slot="{position}"]')
    expect(page.locator("#slot-code")).to_be_focused()
    expect(page.locator("#slot-chosen")).to_have_text(f"slot {position}")
    page.fill("#slot-code", code)
    page.press("#slot-code", "Enter")


def test_a_slot_taken_meanwhile_is_refused_in_red(page: Page, live_server: str) -> None:
    box, = create_locations(live_server, {"name": "Box 7", "rows": 2, "columns": 2})
    first, second, third = create_entities(live_server, {"eClass": "Sample", "name": "First"},
                                           {"eClass": "Sample", "name": "Second"},
                                           {"eClass": "Sample", "name": "Third"})
    log_in(page, live_server)
    page.goto(f"/storage/locations/{box['id']}")
    store_in_slot(page, "A2", first["id"])
    expect(page.locator('td[data-slot="A2"] a')).to_have_text("First")
    # Someone else takes B1 while this page still shows it empty.
    check_in(live_server, box["id"], [{"eClass": "Sample", "id": second["id"],
                                       "position": "B1"}])
    store_in_slot(page, "B1", third["id"])
    error = page.locator("#storage-error")
    expect(error).to_contain_text("slot B1")
    expect(error).to_have_css("color", "rgb(180, 35, 24)")
    expect(page.locator('td[data-slot="B1"] a')).to_have_text("Second")
    expect(page.locator("#contents-table")).not_to_contain_text(third["id"])


def test_move_a_box_to_another_rack(page: Page, live_server: str) -> None:
    rack1, rack2, box = create_locations(
        live_server, {"id": "#r1", "name": "Rack 1"}, {"name": "Rack 2"},
        {"name": "Box 9", "parentID": "#r1", "rows": 2, "columns": 2})
    samples = create_entities(live_server, {"eClass": "Sample"}, {"eClass": "Sample"})
    check_in(live_server, box["id"], [{"eClass": "Sample", "id": s["id"]} for s in samples])
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


def _boxes_with_a_hidden_tube(base_url: str) -> list[dict]:
    """A 9 × 9, a 12 × 8 (8 rows of 12) and a 10 × 10 box in a freezer, each holding carol's
    tubes and, in its last row, a tube of a department carol does not belong to."""
    admin = {"username": "admin", "password": ADMIN_PASSWORD}
    other, = create_entities(base_url, {"eClass": "Department", "name": "Virology"}, **admin)
    boxes = create_locations(
        base_url, {"id": "#f", "name": "Freezer -80 °C"},
        *({"name": f"Box {rows} × {columns}", "parentID": "#f", "rows": rows,
           "columns": columns} for rows, columns in ((9, 9), (8, 12), (10, 10))))[1:]
    tubes = create_entities(base_url, *({"eClass": "Sample", "name": f"PBMC donor 17 day {n}",
                                         **({"barcode": f"FR-2024-{n:05d}"} if n % 2 else {})}
                                        for n in range(6)))
    theirs = create_entities(base_url, *({"eClass": "Sample", "name": "Virology stock",
                                          "departmentID": other["id"]} for _ in boxes),
                             **admin)
    for box, tube, hidden in zip(boxes, (tubes[:2], tubes[2:4], tubes[4:]), theirs,
                                 strict=True):
        last_row = chr(ord("A") + box["rows"] - 1)
        check_in(base_url, box["id"],
                 [{"eClass": "Sample", "id": tube[0]["id"], "position": "A1"},
                  {"eClass": "Sample", "id": tube[1]["id"],
                   "position": f"A{box['columns']}"},
                  {"eClass": "Sample", "id": hidden["id"], "position": f"{last_row}3"}],
                 **admin)
    return boxes


@pytest.mark.parametrize("viewport", [DESKTOP, TABLET], ids=["1366", "768"])
def test_every_column_of_a_box_fits_the_screen(page: Page, live_server: str,
                                               viewport: dict[str, int]) -> None:
    boxes = _boxes_with_a_hidden_tube(live_server)
    page.set_viewport_size(viewport)
    log_in(page, live_server)
    for box in boxes:
        page.goto(f"/storage/locations/{box['id']}")
        grid = page.locator(".box-grid")
        last = grid.locator("tbody tr").last.locator("td").last
        edge = last.bounding_box()
        assert edge["x"] + edge["width"] <= viewport["width"], box["name"]
        assert page.evaluate("document.documentElement.scrollWidth"
                             " <= document.documentElement.clientWidth"), box["name"]
        expect(grid.locator("thead th").last).to_have_text(str(box["columns"]))
        expect(grid.locator("td.slot-occupied")).to_have_text(["occupied"])
        # The first free slot is the one the form stores into: highlighted and so said.
        expect(grid.locator("td.slot-free").first).to_contain_text("chosen")
        expect(grid.locator("td.slot-free").nth(1)).to_contain_text("free")
        expect(page.locator("#grid-count")).to_contain_text(
            f"3 / {box['rows'] * box['columns']} slots taken (1 by items you may not see)")
        assert_no_serious_violations(page)
    first = page.locator('td[data-slot="A1"] a')
    expect(first).to_have_attribute("title", "A1: PBMC donor 17 day 4 (Sample "
                                    f"{first.get_attribute('href').rsplit('/', 1)[1]})")
    expect(first).to_have_text("…or 17 day 4")


def test_a_free_slot_is_chosen_by_keyboard_and_the_tube_stored_there(
        page: Page, live_server: str) -> None:
    box, = create_locations(live_server, {"name": "Box 1", "rows": 9, "columns": 9})
    first, second = create_entities(live_server, {"eClass": "Sample", "name": "First"},
                                    {"eClass": "Sample", "name": "Second",
                                     "barcode": "TUBE-2"})
    check_in(live_server, box["id"], [{"eClass": "Sample", "id": first["id"]}])
    page.set_viewport_size(TABLET)
    log_in(page, live_server)
    page.goto(f"/storage/locations/{box['id']}")
    page.focus("#slot-code")
    page.keyboard.press("Tab")
    expect(page.locator("#slot-form button[type=submit]")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator('td[data-slot="A1"] a')).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator('[data-choose-slot="A2"]')).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#slot-code")).to_be_focused()
    expect(page.locator("#slot-chosen")).to_have_text("slot A2")
    expect(page.locator('td[data-slot="A2"]')).to_have_class("slot slot-free slot-highlight")
    page.keyboard.type("TUBE-2")
    page.keyboard.press("Enter")
    expect(page.locator(".flash-success")).to_have_text(
        f"Sample {second['id']} (Second) checked in at Box 1, slot A2.")
    # A2 is shown (the answer's ?slot=A2) and taken; the next scan goes to A3, which the
    # form names and the grid highlights (issue 32 §5).
    cell = page.locator('td[data-slot="A2"]')
    expect(cell).to_have_class("slot slot-taken slot-shown")
    expect(cell).to_have_attribute("aria-current", "true")
    expect(cell.locator("a")).to_have_text("TUBE-2")
    expect(page.locator("#slot-taken")).to_have_text(
        "Slot A2 is taken by Second. The form stores into slot A3, the first free one.")
    expect(page.locator("#slot-chosen")).to_have_text("slot A3")
    expect(page.locator('td[data-slot="A3"]')).to_have_class("slot slot-free slot-highlight")


def test_a_slot_named_in_the_address_is_highlighted_and_scrolled_to(
        page: Page, live_server: str) -> None:
    box, = create_locations(live_server, {"name": "Deep box", "rows": 10, "columns": 10})
    tube, = create_entities(live_server, {"eClass": "Sample", "name": "Last tube"})
    check_in(live_server, box["id"], [{"eClass": "Sample", "id": tube["id"],
                                       "position": "J10"}])
    page.set_viewport_size({"width": 768, "height": 500})
    log_in(page, live_server)
    page.goto(f"/storage/locations/{box['id']}?slot=J10")
    cell = page.locator('td[data-slot="J10"]')
    expect(cell).to_have_class("slot slot-taken slot-shown")
    expect(cell).to_be_in_viewport()


def test_check_out_asks_first(page: Page, live_server: str) -> None:
    box, = create_locations(live_server, {"name": "Box 3", "rows": 2, "columns": 2})
    tube, = create_entities(live_server, {"eClass": "Sample", "name": "Keep me"})
    check_in(live_server, box["id"], [{"eClass": "Sample", "id": tube["id"]}])
    log_in(page, live_server)
    page.goto(f"/storage/locations/{box['id']}")
    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    row = page.locator(f'tr[data-item="{tube["id"]}"]')
    row.get_by_role("button", name="Check out").click()
    assert asked == [f"Check out Sample {tube['id']} (Keep me) from Box 3?"]
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Check out").click()
    expect(page.locator(".flash-success")).to_contain_text("checked out")
    expect(page.locator("#empty-location")).to_be_visible()
    expect(page.locator("td.slot-free")).to_have_count(4)


def test_bench_asks_before_storing_a_discarded_tube(page: Page, live_server: str) -> None:
    create_locations(live_server, {"name": "Box 4", "rows": 2, "columns": 2,
                                   "barcode": "BOX-4"})
    create_entities(live_server, {"eClass": "Sample", "name": "Old tube", "barcode": "OLD-1",
                                  "status": "Discarded"})
    page.set_viewport_size(TABLET)
    log_in(page, live_server)
    page.goto("/storage/bench")
    scan(page, "BOX-4")
    scan(page, "OLD-1")
    refused = page.locator("#scan-results li").first
    expect(refused).to_have_class("scan-error")
    expect(refused).to_contain_text("is Discarded. Store it anyway?")
    assert_no_serious_violations(page)
    refused.get_by_role("button", name="Store anyway").click()
    expect(page.locator("#scan-results li")).to_have_count(3)
    stored = page.locator("#scan-results li").first
    expect(stored).to_have_class("scan-ok")
    expect(stored).to_contain_text("checked in at Box 4, slot A1.")
    expect(page.locator("#scan-code")).to_be_focused()


def test_the_storage_pages_pass_axe(page: Page, live_server: str) -> None:
    boxes = _boxes_with_a_hidden_tube(live_server)
    page.set_viewport_size(TABLET)
    log_in(page, live_server)
    for url in ("/storage", f"/storage/locations/{boxes[0]['id']}?slot=B2", "/storage/bench",
                f"/storage/labels?ids={boxes[0]['id']}"):
        page.goto(url)
        assert_no_serious_violations(page)
    page.goto("/storage")
    expect(page.locator(f'li[data-location="{boxes[0]["parentID"]}"] > .fill-text')
           ).to_have_text("9 stored")


@pytest.mark.parametrize("viewport", [DESKTOP, TABLET], ids=["1366", "768"])
def test_moves_say_where_the_tube_came_from(page: Page, live_server: str,
                                            viewport: dict[str, int]) -> None:
    """Issue 19 §1, §3: a tube moved within its box says 'moved A1 → C4'; one scanned into
    another box in bench mode says where it was."""
    rack, first, second = create_locations(
        live_server, {"id": "#rack", "name": "Rack 3"},
        {"name": "Box 12", "parentID": "#rack", "rows": 9, "columns": 9},
        {"name": "Box 13", "parentID": "#rack", "rows": 9, "columns": 9, "barcode": "BOX-13"})
    tube, = create_entities(live_server, {"eClass": "Sample", "name": "Serum", "barcode": "S-1"})
    check_in(live_server, first["id"], [{"eClass": "Sample", "id": tube["id"],
                                         "position": "A1"}])
    page.set_viewport_size(viewport)
    log_in(page, live_server)
    page.goto(f"/storage/locations/{first['id']}?slot=C4")
    page.fill("#slot-code", "S-1")
    page.press("#slot-code", "Enter")
    expect(page.locator(".flash-success")).to_have_text(
        f"Sample {tube['id']} (Serum) moved A1 → C4.")
    expect(page.locator('td[data-slot="C4"]')).to_have_class(re.compile(r"\bslot-taken\b"))
    expect(page.locator('td[data-slot="A1"]')).to_have_class(re.compile(r"\bslot-free\b"))
    page.goto("/storage/bench")
    scan(page, "BOX-13")
    scan(page, "S-1")
    moved = page.locator("#scan-results li").first
    expect(moved).to_have_class("scan-ok")
    expect(moved).to_contain_text("moved from Rack 3 / Box 12, slot C4 → Rack 3 / Box 13, "
                                  "slot A1")
    assert page.evaluate("document.documentElement.scrollWidth"
                         " <= document.documentElement.clientWidth")


@pytest.mark.parametrize("viewport", [DESKTOP, TABLET], ids=["1366", "768"])
def test_a_held_slot_in_the_address_offers_the_first_free_one_and_the_log_scrolls_by_keyboard(
        page: Page, live_server: str, viewport: dict[str, int]) -> None:
    """Issue 32 §5: ?slot=A1 on a held slot said the form stored into A1 (it stored into the
    first free one); the log scrolled without keyboard access; contents sorted A10 before
    A2."""
    box, = create_locations(live_server, {"name": "Box 3", "rows": 8, "columns": 12})
    tubes = create_entities(live_server, *({"eClass": "Sample", "name": f"Tube {n}",
                                            "barcode": f"T-{n}"} for n in range(13)))
    check_in(live_server, box["id"], [{"eClass": "Sample", "id": tube["id"]}
                                      for tube in tubes[:12]])
    live_post(live_server, "/api/storage/location/checkout",
              [{"eClass": "Sample", "id": tube["id"]} for tube in tubes[1:11]], 200)
    check_in(live_server, box["id"], [{"eClass": "Sample", "id": tube["id"]}
                                      for tube in tubes[1:11]])
    page.set_viewport_size(viewport)
    log_in(page, live_server)
    page.goto(f"/storage/locations/{box['id']}?slot=A1")
    expect(page.locator("#slot-taken")).to_have_text(
        "Slot A1 is taken by Tube 0. The form stores into slot B1, the first free one.")
    expect(page.locator('td[data-slot="A1"]')).to_have_class("slot slot-taken slot-shown")
    expect(page.locator('td[data-slot="B1"]')).to_have_class("slot slot-free slot-highlight")
    expect(page.locator("#slot-chosen")).to_have_text("slot B1")
    positions = page.locator("#contents-table tbody td:first-child").all_inner_texts()
    assert positions == [f"A{column}" for column in range(1, 13)]
    # The log is a region that scrolls; the keyboard reaches and scrolls it.
    log = page.locator("#log .table-wrap")
    assert log.evaluate("wrap => wrap.scrollHeight > wrap.clientHeight")
    expect(page.locator("#log-table tbody tr").first).to_contain_text("Checked in")
    expect(page.locator("#log-table tbody tr").first).to_contain_text("Carol Chemist")
    log.focus()
    expect(log).to_be_focused()
    page.keyboard.press("PageDown")
    page.wait_for_function("() => document.querySelector('#log .table-wrap').scrollTop > 0")
    assert_no_serious_violations(page)
    assert page.evaluate("document.documentElement.scrollWidth"
                         " <= document.documentElement.clientWidth")
    # What the form says is where the tube goes.
    page.fill("#slot-code", "T-12")
    page.press("#slot-code", "Enter")
    expect(page.locator(".flash-success")).to_contain_text("slot B1")
    expect(page.locator('td[data-slot="B1"] a')).to_have_text("T-12")
