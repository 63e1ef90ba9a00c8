"""The storage pages through the test client: tree, location page with its box grid,
check-in and check-out forms, bench-mode scans, the move with its confirmation, labels."""
from __future__ import annotations

import re
from collections.abc import Callable

from flask import Flask
from flask.testing import FlaskClient

from labapp.storage.service import closed_status
from tests.conftest import ApiClient
from tests.entities.conftest import Grants
from tests.helpers.pages import html_of, page_login, post_form
from tests.storage.conftest import body_of, check_in, make_items, make_locations, refs


def cell(page: str, position: str) -> str:
    """The ``<td>`` of one slot of the box grid, tags included."""
    found = re.search(rf'<td [^>]*data-slot="{position}"[^>]*>.*?</td>', page, re.S)
    assert found, f"no slot {position}"
    return found[0]


def flashed(client: FlaskClient, response) -> str:
    """The page a redirecting form answer leads to (with its flashed message)."""
    assert response.status_code == 302, html_of(response)
    return html_of(client.get(response.headers["Location"]))


def test_tree_shows_fill_bars_and_needs_a_login(client: FlaskClient, alice: ApiClient) -> None:
    assert client.get("/storage").status_code == 302
    freezer, box = make_locations(alice, {"id": "#f", "name": "Freezer A"},
                                  {"name": "Box 5", "parentID": "#f", "capacity": 4})
    check_in(alice, box["id"], refs("Sample", make_items(alice, "Sample", 3)))
    assert page_login(client, "alice").status_code == 303
    page = html_of(client.get("/storage"))
    assert "Freezer A" in page and 'value="3"' in page and "3 / 4" in page
    assert page.index("Freezer A") < page.index("Box 5")


def test_box_page_draws_the_grid_and_an_empty_slot_checks_in(browser: FlaskClient,
                                                            alice: ApiClient) -> None:
    box, = make_locations(alice, {"name": "Box", "rows": 2, "columns": 3})
    first, second = make_items(alice, "Sample", 2)
    check_in(alice, box["id"], [{"eClass": "Sample", "id": first, "position": "B3"}])
    url = f"/storage/locations/{box['id']}"
    page = html_of(browser.get(url))
    assert page.count('class="slot slot-taken"') == 1 and page.count("slot slot-free") == 5
    assert f'<a href="/entities/Sample/{first}" title="B3: {first}' in cell(page, "B3")
    assert 'data-choose-slot="A2"' in cell(page, "A2") and ">free<" in cell(page, "A2")
    assert '<strong>1 / 6</strong> slots taken' in page
    response = post_form(browser, f"{url}/checkin", {"code": second, "position": "A2"})
    assert response.headers["Location"].endswith("?slot=A2")
    assert f"{second} ({second}) checked in at Box, slot A2." in flashed(browser, response)
    assert body_of(alice.get(f"/api/entity/Sample/{second}"), 200)["position"] == "A2"
    refused = post_form(browser, f"{url}/checkin", {"code": first, "position": "A2"})
    assert refused.status_code == 409 and "slot A2" in html_of(refused)
    assert f'data-confirm="Check out Sample {second} ({second}) from Box?"' in html_of(
        browser.get(url))
    out = post_form(browser, f"{url}/checkout", {"eClass": "Sample", "id": second})
    assert out.status_code == 302
    assert body_of(alice.get(f"/api/entity/Sample/{second}"), 200)["locationID"] is None
    assert "checkout" in html_of(browser.get(url))


def test_bench_scans_a_location_then_items(browser: FlaskClient, alice: ApiClient) -> None:
    box, = make_locations(alice, {"name": "Box", "rows": 1, "columns": 2, "barcode": "LB-1"})
    samples = make_items(alice, "Sample", 3)
    headers = {"HX-Request": "true"}
    answer = post_form(browser, "/storage/bench/scan", {"code": "LB-1", "target": ""},
                       headers=headers)
    assert answer.status_code == 200 and "Now storing into Box" in html_of(answer)
    assert 'hx-swap-oob="true"' in html_of(answer) and f'value="{box["id"]}"' in html_of(answer)
    for sample, slot in zip(samples[:2], ("A1", "A2"), strict=True):
        answer = post_form(browser, "/storage/bench/scan",
                           {"code": sample, "target": box["id"]}, headers=headers)
        assert answer.status_code == 200 and f"slot {slot}" in html_of(answer)
    full = post_form(browser, "/storage/bench/scan", {"code": samples[2], "target": box["id"]},
                     headers=headers)
    assert full.status_code == 409 and "scan-error" in html_of(full)
    unknown = post_form(browser, "/storage/bench/scan", {"code": "NOPE", "target": ""},
                        headers=headers)
    assert unknown.status_code == 404 and "scan-error" in html_of(unknown)
    out = post_form(browser, "/storage/bench/scan",
                    {"code": samples[0], "mode": "checkout", "target": box["id"]},
                    headers=headers)
    assert out.status_code == 200 and "checked out" in html_of(out)
    plain = post_form(browser, "/storage/bench/scan", {"code": samples[2]})
    assert plain.status_code == 400 and "<html" in html_of(plain) and "Scan a location" in html_of(
        plain)


def test_move_asks_for_confirmation_then_moves(browser: FlaskClient, alice: ApiClient) -> None:
    rack1, rack2, box = make_locations(alice, {"id": "#r1", "name": "Rack 1"},
                                       {"name": "Rack 2"},
                                       {"name": "Box", "parentID": "#r1"})
    check_in(alice, box["id"], refs("Sample", make_items(alice, "Sample", 2)))
    url = f"/storage/locations/{box['id']}/move"
    page = html_of(browser.get(url))
    assert f'<option value="{rack2["id"]}"' in page and f'value="{box["id"]}"' not in page
    confirm = post_form(browser, url, {"parentID": rack2["id"]})
    assert confirm.status_code == 200 and 'id="move-items">2<' in html_of(confirm)
    assert body_of(alice.get(f"/api/storage/location/{box['id']}"), 200)["parentID"] \
        == rack1["id"]
    done = post_form(browser, url, {"parentID": rack2["id"], "confirmed": "yes"})
    assert done.status_code == 302
    moved = body_of(alice.get(f"/api/storage/location/{box['id']}"), 200)
    assert moved["hierarchy"] == "Rack 2 / Box" and moved["stored"] == 2
    # Into what lies below it: not offered, and refused when posted anyway.
    assert post_form(browser, f"/storage/locations/{rack2['id']}/move",
                     {"parentID": box["id"]}).status_code == 400


def test_labels_draw_both_codes_as_svg(browser: FlaskClient, alice: ApiClient) -> None:
    sample, = make_items(alice, "Sample", 1, barcode="BC-42")
    experiment, = make_items(alice, "Experiment", 1)
    page = html_of(browser.get("/storage/labels", query_string={
        "ids": f"{sample}, {experiment} NOPE"}))
    assert page.count('data-label="') == 1 and "BC-42" in page
    assert page.count("<svg") == 2 and "style=" not in page.split('id="label-sheet"')[1]
    assert f"No label for: {experiment}, NOPE" in page


def test_hidden_location_pages_are_404(browser: FlaskClient) -> None:
    for url in ("/storage/locations/NOPE", "/storage/locations/NOPE/move"):
        assert browser.get(url).status_code == 404


def test_a_slot_another_department_holds_is_occupied_counted_and_never_offered(
        browser: FlaskClient, alice: ApiClient, admin: ApiClient,
        department: Callable[..., str], grant: Grants) -> None:
    other = department("Other")
    box, = make_locations(admin, {"name": "Shared box", "rows": 9, "columns": 9})
    theirs, = make_items(admin, "Sample", 1, departmentID=other, name="Their serum",
                         barcode="THEIRS-1")
    mine, spare = make_items(alice, "Sample", 2)
    check_in(admin, box["id"], [{"eClass": "Sample", "id": theirs, "position": "I7"},
                                {"eClass": "Sample", "id": mine, "position": "A1"}])
    url = f"/storage/locations/{box['id']}"
    page = html_of(browser.get(url))
    slot = cell(page, "I7")
    assert 'class="slot slot-occupied"' in slot and ">occupied</span>" in slot
    assert "data-choose-slot" not in slot and "<a " not in slot
    assert theirs not in page and "Their serum" not in page and "THEIRS-1" not in page
    assert "<strong>2 / 81</strong> slots taken (1 by items you may not see)" in page
    assert page.count("slot slot-free") == 79 and page.count("data-choose-slot=") == 79
    assert "2 / 81" in page.split('id="location-summary"')[1].split("</p>")[0]
    refused = post_form(browser, f"{url}/checkin", {"code": spare, "position": "I7"})
    assert refused.status_code == 409 and "slot I7" in html_of(refused)
    assert theirs not in html_of(refused)
    # A box the viewer may only read: free slots are drawn, never offered.
    readonly = department("Read only")
    grant.department(readonly, "Read", user="alice")
    shelf, = make_locations(admin, {"name": "Their box", "rows": 2, "columns": 2,
                                    "departmentID": readonly})
    page = html_of(browser.get(f"/storage/locations/{shelf['id']}"))
    assert page.count("slot slot-free") == 4 and "data-choose-slot" not in page
    assert 'id="slot-form"' not in page


def _tree_entry(page: str, location_id: str) -> str:
    """What the storage tree says of one location (up to its children)."""
    found = re.search(rf'<li data-location="{location_id}">(.*?)(?:<ul|</li>)', page, re.S)
    assert found, f"{location_id} is not in the tree"
    return found[1]


def test_the_tree_counts_what_is_stored_below_each_location(
        browser: FlaskClient, alice: ApiClient, admin: ApiClient,
        department: Callable[..., str]) -> None:
    other = department("Other")
    freezer, rack, box, hidden = make_locations(
        admin, {"id": "#f", "name": "Freezer -80"},
        {"id": "#r", "name": "Rack 1", "parentID": "#f", "capacity": 4},
        {"name": "Box 1", "parentID": "#r", "rows": 9, "columns": 9},
        {"name": "Their box", "parentID": "#r", "departmentID": other})
    check_in(admin, box["id"], refs("Sample", make_items(admin, "Sample", 3)))
    check_in(admin, rack["id"], refs("Sample", make_items(admin, "Sample", 1)))
    check_in(admin, hidden["id"], refs("Sample", make_items(admin, "Sample", 2,
                                                           departmentID=other)))
    page = html_of(browser.get("/storage"))
    assert "6 stored" in _tree_entry(page, freezer["id"])
    assert "1 / 4 · 6 in all" in _tree_entry(page, rack["id"])
    assert "3 / 81" in _tree_entry(page, box["id"]) and "in all" not in _tree_entry(
        page, box["id"])
    assert hidden["id"] not in page and "Their box" not in page
    location = html_of(browser.get(f"/storage/locations/{freezer['id']}"))
    assert "6 stored" in location.split('id="location-summary"')[1].split("</p>")[0]
    assert "1 / 4 · 6 in all" in location.split('id="children"')[1]


def test_storing_a_stored_tube_says_where_it_moved_from(browser: FlaskClient,
                                                         alice: ApiClient) -> None:
    rack, first, second = make_locations(
        alice, {"id": "#r", "name": "Rack"},
        {"name": "Box 1", "parentID": "#r", "rows": 3, "columns": 3, "barcode": "BOX-1"},
        {"name": "Box 2", "parentID": "#r", "rows": 3, "columns": 3})
    tube, = make_items(alice, "Sample", 1, name="Tube 7", barcode="T-7")
    said = f"Sample {tube} (Tube 7)"
    into_first = f"/storage/locations/{first['id']}/checkin"
    answer = post_form(browser, into_first, {"code": "T-7", "position": "A1"})
    assert f"{said} checked in at Rack / Box 1, slot A1." in flashed(browser, answer)
    answer = post_form(browser, into_first, {"code": "T-7", "position": "C3"})
    assert f"{said} moved A1 → C3." in flashed(browser, answer)
    answer = post_form(browser, f"/storage/locations/{second['id']}/checkin", {"code": "T-7"})
    assert (f"{said} moved from Rack / Box 1, slot C3 → Rack / Box 2, slot A1."
            in flashed(browser, answer))
    headers = {"HX-Request": "true"}
    scanned = post_form(browser, "/storage/bench/scan", {"code": "T-7", "target": first["id"]},
                        headers=headers)
    assert scanned.status_code == 200 and "scan-ok" in html_of(scanned)
    assert (f"{said} moved from Rack / Box 2, slot A1 → Rack / Box 1, slot A1."
            in html_of(scanned))
    again = post_form(browser, "/storage/bench/scan", {"code": "T-7", "target": first["id"]},
                      headers=headers)
    assert f"{said} is already at Rack / Box 1, slot A1." in html_of(again)


def test_a_tube_whose_workflow_is_over_is_stored_only_when_confirmed(
        app: Flask, browser: FlaskClient, alice: ApiClient) -> None:
    box, = make_locations(alice, {"name": "Box", "rows": 2, "columns": 2})
    discarded, = make_items(alice, "Sample", 1, name="Old", status="Discarded")
    canceled, = make_items(alice, "Sample", 1, status="Canceled")
    completed, = make_items(alice, "Sample", 1, status="Completed")
    with app.app_context():
        assert [closed_status("Sample", key) for key in (discarded, canceled, completed)] \
            == ["Discarded", "Canceled", None]
    url = f"/storage/locations/{box['id']}"
    refused = post_form(browser, f"{url}/checkin", {"code": discarded, "position": "B2"})
    page = html_of(refused)
    assert refused.status_code == 409
    assert f"Sample {discarded} (Old) is Discarded. Store it anyway?" in page
    form = page.split('id="confirm-form"')[1].split("</form>")[0]
    for field in (f'name="code" value="{discarded}"', 'name="position" value="B2"',
                  'name="confirm" value="yes"', 'id="store-anyway"'):
        assert field in form
    assert body_of(alice.get(f"/api/entity/Sample/{discarded}"), 200)["locationID"] is None
    stored = post_form(browser, f"{url}/checkin",
                       {"code": discarded, "position": "B2", "confirm": "yes"})
    assert "checked in at Box, slot B2." in flashed(browser, stored)
    assert body_of(alice.get(f"/api/entity/Sample/{discarded}"), 200)["position"] == "B2"
    headers = {"HX-Request": "true"}
    scan = {"code": canceled, "target": box["id"]}
    asked = post_form(browser, "/storage/bench/scan", scan, headers=headers)
    assert asked.status_code == 409 and "is Canceled. Store it anyway?" in html_of(asked)
    assert 'name="confirm" value="yes"' in html_of(asked)
    assert "Store anyway</button>" in html_of(asked)
    assert body_of(alice.get(f"/api/entity/Sample/{canceled}"), 200)["locationID"] is None
    confirmed = post_form(browser, "/storage/bench/scan", {**scan, "confirm": "yes"},
                          headers=headers)
    assert confirmed.status_code == 200 and "checked in at Box, slot A1." in html_of(confirmed)
    plain = post_form(browser, "/storage/bench/scan", {"code": completed, "target": box["id"]},
                      headers=headers)
    assert plain.status_code == 200 and "slot A2" in html_of(plain)


def test_a_slot_named_in_the_address_is_highlighted(browser: FlaskClient,
                                                    alice: ApiClient) -> None:
    box, = make_locations(alice, {"name": "Box", "rows": 3, "columns": 4})
    tube, second = make_items(alice, "Sample", 2)
    check_in(alice, box["id"], [{"eClass": "Sample", "id": tube, "position": "A1"}])
    url = f"/storage/locations/{box['id']}"
    free = html_of(browser.get(url, query_string={"slot": "c04"}))
    assert "slot-highlight" in cell(free, "C4") and 'aria-current="true"' in cell(free, "C4")
    assert free.count('aria-current="true"') == 1
    assert 'id="slot-position" value="C4"' in free
    assert '<span id="slot-chosen">slot C4</span>' in free
    # A slot held by an item: said taken, marked apart; the form offers, and highlights,
    # the first free slot, which it really stores into (issue 32 §5).
    taken = html_of(browser.get(url, query_string={"slot": "A1"}))
    assert 'aria-current="true"' in cell(taken, "A1") and "slot-shown" in cell(taken, "A1")
    assert "slot-highlight" not in cell(taken, "A1") and taken.count('aria-current="true"') == 1
    assert "slot-highlight" in cell(taken, "A2") and ">chosen<" in cell(taken, "A2")
    assert 'id="slot-position" value="A2"' in taken
    assert '<span id="slot-chosen">slot A2</span>' in taken
    assert (f"Slot A1 is taken by {tube}. The form stores into slot A2, the first free one."
            in re.sub(r"\s+", " ", taken))
    assert f'<a href="{url}?slot=A1">A1</a>' in taken.split('id="contents-table"')[1]
    stored = post_form(browser, f"{url}/checkin", {"code": second, "position": "A2"})
    assert body_of(alice.get(f"/api/entity/Sample/{second}"), 200)["position"] == "A2"
    after = html_of(browser.get(stored.headers["Location"]))
    assert "slot-shown" in cell(after, "A2") and "slot-highlight" in cell(after, "A3")
    outside = html_of(browser.get(url, query_string={"slot": "D5"}))
    assert 'aria-current="true"' not in outside
    for junk in ("A" * 10000 + "1", "ZZZZ9999", "<b>A1</b>", "a01"):
        answer = browser.get(url, query_string={"slot": junk})
        assert answer.status_code == 200, junk
        assert html_of(answer).count('aria-current="true"') == (1 if junk == "a01" else 0), junk
    assert browser.get(url, query_string={"slot": "\x00\x01A1"}).status_code == 400


def test_contents_sort_by_slot_as_people_read_a_box(browser: FlaskClient,
                                                    alice: ApiClient) -> None:
    box, = make_locations(alice, {"name": "Box", "rows": 2, "columns": 12})
    tubes = make_items(alice, "Sample", 5)
    check_in(alice, box["id"], [{"eClass": "Sample", "id": tube, "position": position}
                                for tube, position in zip(tubes, ("B1", "A10", "A2", "A12",
                                                                  "A1"), strict=True)])
    page = html_of(browser.get(f"/storage/locations/{box['id']}"))
    contents = page.split('id="contents-table"')[1].split("</table>")[0]
    assert re.findall(r'\?slot=(\w+)">', contents) == ["A1", "A2", "A10", "A12", "B1"]


def test_a_full_box_says_so_instead_of_offering_a_slot(browser: FlaskClient,
                                                       alice: ApiClient) -> None:
    box, = make_locations(alice, {"name": "Box", "rows": 1, "columns": 2})
    check_in(alice, box["id"], refs("Sample", make_items(alice, "Sample", 2)))
    page = html_of(browser.get(f"/storage/locations/{box['id']}", query_string={"slot": "A2"}))
    assert 'id="slot-form"' not in page and 'id="box-full"' in page
    assert "Slot A2 is taken by" in page and "The form stores" not in page


def test_the_log_names_people_and_items_in_words_and_scrolls_by_keyboard(
        browser: FlaskClient, alice: ApiClient) -> None:
    box, = make_locations(alice, {"name": "Box", "rows": 2, "columns": 2})
    tube, = make_items(alice, "Sample", 1, name="Broth")
    check_in(alice, box["id"], [{"eClass": "Sample", "id": tube, "position": "A1"}])
    alice.post("/api/storage/location/checkout", json=[{"eClass": "Sample", "id": tube}])
    page = html_of(browser.get(f"/storage/locations/{box['id']}"))
    log = page.split('id="log-table"')[1].split("</table>")[0]
    assert log.count("<td>Checked in</td>") == 1 and log.count("<td>Checked out</td>") == 1
    assert (f'<a href="/entities/Sample/{tube}">Broth</a> '
            f'<span class="muted ref-id">{tube}</span>') in log
    assert '<a href="/entities/User/alice">' in log and "checkin<" not in log
    assert re.search(r'<div class="table-wrap fit-list" tabindex="0" role="region" '
                     r'aria-labelledby="log-heading">', page)
