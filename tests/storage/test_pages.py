"""The storage pages through the test client: tree, location page with its box grid,
check-in and check-out forms, bench-mode scans, the move with its confirmation, labels."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from flask.testing import FlaskClient

from tests.conftest import ApiClient
from tests.storage.conftest import body_of, check_in, make_items, make_locations, refs
from tests.web.test_pages import page_login, post_form


@pytest.fixture
def alice(make_user: Callable[..., str], api_as: Callable[..., ApiClient]) -> ApiClient:
    make_user("alice")
    return api_as("alice")


@pytest.fixture
def browser(client: FlaskClient, alice: ApiClient) -> FlaskClient:
    assert page_login(client, "alice").status_code == 303
    return client


def html(response) -> str:
    return response.get_data(as_text=True)


def test_tree_shows_fill_bars_and_needs_a_login(client: FlaskClient, alice: ApiClient) -> None:
    assert client.get("/storage").status_code == 302
    freezer, box = make_locations(alice, {"id": "#f", "name": "Freezer A"},
                                  {"name": "Box 5", "parentID": "#f", "capacity": 4})
    check_in(alice, box["id"], refs("Sample", make_items(alice, "Sample", 3)))
    assert page_login(client, "alice").status_code == 303
    page = html(client.get("/storage"))
    assert "Freezer A" in page and 'value="3"' in page and "3 / 4" in page
    assert page.index("Freezer A") < page.index("Box 5")


def test_box_page_draws_the_grid_and_an_empty_slot_checks_in(browser: FlaskClient,
                                                            alice: ApiClient) -> None:
    box, = make_locations(alice, {"name": "Box", "rows": 2, "columns": 3})
    first, second = make_items(alice, "Sample", 2)
    check_in(alice, box["id"], [{"eClass": "Sample", "id": first, "position": "B3"}])
    url = f"/storage/locations/{box['id']}"
    page = html(browser.get(url))
    assert page.count('class="slot slot-taken"') == 1 and page.count("slot slot-free") == 5
    assert f'data-slot="B3"><a href="/entities/Sample/{first}"' in page
    response = post_form(browser, f"{url}/checkin", {"code": second, "position": "A2"})
    assert response.status_code == 302
    assert body_of(alice.get(f"/api/entity/Sample/{second}"), 200)["position"] == "A2"
    refused = post_form(browser, f"{url}/checkin", {"code": first, "position": "A2"})
    assert refused.status_code == 409 and "slot A2" in html(refused)
    out = post_form(browser, f"{url}/checkout", {"eClass": "Sample", "id": second})
    assert out.status_code == 302
    assert body_of(alice.get(f"/api/entity/Sample/{second}"), 200)["locationID"] is None
    assert "checkout" in html(browser.get(url))


def test_bench_scans_a_location_then_items(browser: FlaskClient, alice: ApiClient) -> None:
    box, = make_locations(alice, {"name": "Box", "rows": 1, "columns": 2, "barcode": "LB-1"})
    samples = make_items(alice, "Sample", 3)
    headers = {"HX-Request": "true"}
    answer = post_form(browser, "/storage/bench/scan", {"code": "LB-1", "target": ""},
                       headers=headers)
    assert answer.status_code == 200 and "Now storing into Box" in html(answer)
    assert 'hx-swap-oob="true"' in html(answer) and f'value="{box["id"]}"' in html(answer)
    for sample, slot in zip(samples[:2], ("A1", "A2"), strict=True):
        answer = post_form(browser, "/storage/bench/scan",
                           {"code": sample, "target": box["id"]}, headers=headers)
        assert answer.status_code == 200 and f"slot {slot}" in html(answer)
    full = post_form(browser, "/storage/bench/scan", {"code": samples[2], "target": box["id"]},
                     headers=headers)
    assert full.status_code == 409 and "scan-error" in html(full)
    unknown = post_form(browser, "/storage/bench/scan", {"code": "NOPE", "target": ""},
                        headers=headers)
    assert unknown.status_code == 404 and "scan-error" in html(unknown)
    out = post_form(browser, "/storage/bench/scan",
                    {"code": samples[0], "mode": "checkout", "target": box["id"]},
                    headers=headers)
    assert out.status_code == 200 and "checked out" in html(out)
    plain = post_form(browser, "/storage/bench/scan", {"code": samples[2]})
    assert plain.status_code == 400 and "<html" in html(plain) and "Scan a location" in html(
        plain)


def test_move_asks_for_confirmation_then_moves(browser: FlaskClient, alice: ApiClient) -> None:
    rack1, rack2, box = make_locations(alice, {"id": "#r1", "name": "Rack 1"},
                                       {"name": "Rack 2"},
                                       {"name": "Box", "parentID": "#r1"})
    check_in(alice, box["id"], refs("Sample", make_items(alice, "Sample", 2)))
    url = f"/storage/locations/{box['id']}/move"
    page = html(browser.get(url))
    assert f'<option value="{rack2["id"]}"' in page and f'value="{box["id"]}"' not in page
    confirm = post_form(browser, url, {"parentID": rack2["id"]})
    assert confirm.status_code == 200 and 'id="move-items">2<' in html(confirm)
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
    page = html(browser.get("/storage/labels", query_string={
        "ids": f"{sample}, {experiment} NOPE"}))
    assert page.count('data-label="') == 1 and "BC-42" in page
    assert page.count("<svg") == 2 and "style=" not in page.split('id="label-sheet"')[1]
    assert f"No label for: {experiment}, NOPE" in page


def test_hidden_location_pages_are_404(browser: FlaskClient) -> None:
    for url in ("/storage/locations/NOPE", "/storage/locations/NOPE/move"):
        assert browser.get(url).status_code == 404
