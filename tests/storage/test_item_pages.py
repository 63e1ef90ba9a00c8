"""The storage part of a sample's or plate's page through the test client (issue 19): where
it is, checking it in and out from there, who may, and the confirmation of a final status."""
from __future__ import annotations

import re
from html import unescape

import pytest
from flask.testing import FlaskClient

from labapp.entities.display import STORED_CLASSES
from labapp.storage.service import STORABLE_CLASSES
from tests.conftest import ApiClient
from tests.helpers.pages import page_login, post_form
from tests.storage.conftest import (
    body_of,
    check_in,
    make_items,
    make_locations,
    refs,
    storage_snapshot,
)


@pytest.fixture
def box(alice: ApiClient) -> dict:
    """Lab 2 / Freezer -80 / Rack 3 / Box 12, a 2 × 3 grid with the barcode BOX-12."""
    *_, made = make_locations(alice, {"id": "#lab", "name": "Lab 2"},
                              {"id": "#freezer", "name": "Freezer -80", "parentID": "#lab"},
                              {"id": "#rack", "name": "Rack 3", "parentID": "#freezer"},
                              {"name": "Box 12", "parentID": "#rack", "rows": 2, "columns": 3,
                               "barcode": "BOX-12"})
    return made


def html(response) -> str:
    return response.get_data(as_text=True)


def storage_part(page: str) -> str:
    """The storage section of a detail page ('' when it has none)."""
    match = re.search(r'<section class="card storage-card" id="storage".*?</section>', page,
                      re.S)
    return match.group(0) if match else ""


def text_of(fragment: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def where(api: ApiClient, sample: str) -> tuple[str | None, str | None]:
    stored = body_of(api.get(f"/api/entity/Sample/{sample}"), 200)
    return stored["locationID"], stored["position"]


def test_a_stored_sample_shows_its_place_with_the_box_and_its_actions(
        browser: FlaskClient, alice: ApiClient, box: dict) -> None:
    sample, = make_items(alice, "Sample", 1)
    check_in(alice, box["id"], [{"eClass": "Sample", "id": sample, "position": "B2"}])
    part = storage_part(html(browser.get(f"/entities/Sample/{sample}")))
    stored_in = re.search(r'<p class="stored-in" id="stored-in">.*?</p>', part, re.S).group(0)
    assert text_of(stored_in) == "Stored in Lab 2 / Freezer -80 / Rack 3 / Box 12 · B2"
    assert (f'<a href="/storage/locations/{box["id"]}?slot=B2" id="stored-in-location">'
            in stored_in)
    assert f'action="/storage/items/Sample/{sample}/checkout"' in part
    assert 'data-confirm="Check Sample' in part and "Box 12 · B2?" in part
    assert f'href="/storage/labels?ids={sample}"' in part
    assert f'action="/storage/items/Sample/{sample}/checkin"' in part
    # The fields show the place too, the slot inside it rather than on its own.
    fields = html(browser.get(f"/entities/Sample/{sample}")).split('id="fields"')[1]
    assert "Lab 2 / Freezer -80 / Rack 3 / Box 12 · B2" in fields
    assert "<dt>Position</dt>" not in fields


def test_a_sample_not_stored_offers_check_in_only(browser: FlaskClient,
                                                  alice: ApiClient) -> None:
    sample, = make_items(alice, "Sample", 1)
    part = storage_part(html(browser.get(f"/entities/Sample/{sample}")))
    assert text_of(re.search(r'<p class="stored-in".*?</p>', part, re.S).group(0)) \
        == "Not stored"
    assert 'id="checkin-form"' in part and 'id="checkout-form"' not in part
    assert 'id="print-label"' in part


def test_check_in_from_the_page_returns_to_it_with_a_message(
        browser: FlaskClient, alice: ApiClient, box: dict) -> None:
    sample, = make_items(alice, "Sample", 1)
    url = f"/storage/items/Sample/{sample}/checkin"
    response = post_form(browser, url, {"locationID": "BOX-12", "position": "a3"})
    assert response.status_code == 303
    assert response.headers["Location"] == f"/entities/Sample/{sample}#storage"
    assert where(alice, sample) == (box["id"], "A3")
    page = html(browser.get(f"/entities/Sample/{sample}"))
    assert (f"Sample {sample} checked in to Lab 2 / Freezer -80 / Rack 3 / Box 12 · A3."
            in page)
    # By its id, no slot: the first free one; a sample stored elsewhere moves.
    other, = make_locations(alice, {"name": "Fridge"})
    assert post_form(browser, url, {"locationID": other["id"]}).status_code == 303
    assert where(alice, sample) == (other["id"], None)


@pytest.mark.parametrize(("form", "status", "message"), [
    ({"locationID": "BOX-12", "position": "A1"}, 409, "slot A1"),
    ({"locationID": "BOX-12", "position": "Z9"}, 400, "not a slot"),
    ({"locationID": "NO-SUCH-CODE"}, 400, "No location you may see carries"),
    ({"locationID": ""}, 400, "Scan or type the location first."),
])
def test_a_refused_check_in_shows_the_page_again_and_changes_nothing(
        app, browser: FlaskClient, alice: ApiClient, box: dict, form: dict, status: int,
        message: str) -> None:
    holder, sample = make_items(alice, "Sample", 2)
    check_in(alice, box["id"], [{"eClass": "Sample", "id": holder, "position": "A1"}])
    before = storage_snapshot(app)
    response = post_form(browser, f"/storage/items/Sample/{sample}/checkin", form)
    assert response.status_code == status
    part = storage_part(html(response))
    assert 'id="storage-error"' in part and message in unescape(part)
    # The form shows again what was typed.
    assert f'value="{form["locationID"]}"' in part
    assert f'value="{form.get("position", "")}">' in part
    assert storage_snapshot(app) == before


def test_a_code_that_names_no_location_is_refused(browser: FlaskClient,
                                                  alice: ApiClient) -> None:
    sample, tube = make_items(alice, "Sample", 2)
    response = post_form(browser, f"/storage/items/Sample/{sample}/checkin", {"locationID": tube})
    assert response.status_code == 400
    assert f"{tube} is a Sample, not a location." in html(response)
    assert where(alice, sample) == (None, None)


def test_check_out_from_the_page_returns_to_it_with_a_message(
        browser: FlaskClient, alice: ApiClient, box: dict) -> None:
    sample, = make_items(alice, "Sample", 1)
    check_in(alice, box["id"], [{"eClass": "Sample", "id": sample, "position": "B3"}])
    response = post_form(browser, f"/storage/items/Sample/{sample}/checkout")
    assert response.status_code == 303
    assert response.headers["Location"] == f"/entities/Sample/{sample}#storage"
    assert where(alice, sample) == (None, None)
    page = html(browser.get(f"/entities/Sample/{sample}"))
    assert f"Sample {sample} checked out of Lab 2 / Freezer -80 / Rack 3 / Box 12 · B3." in page
    assert text_of(re.search(r'<p class="stored-in".*?</p>', page, re.S).group(0)) \
        == "Not stored"
    log = body_of(alice.get(f"/api/storage/location/{box['id']}/log"), 200)["data"]
    assert [entry["action"] for entry in log] == ["checkout", "checkin"]
    # Out again: nothing is stored, so the page says why and nothing is logged.
    again = post_form(browser, f"/storage/items/Sample/{sample}/checkout")
    assert again.status_code == 409 and "is not stored anywhere" in html(again)


def test_a_plate_has_the_storage_part_and_an_experiment_none(
        browser: FlaskClient, alice: ApiClient, box: dict) -> None:
    plate, = make_items(alice, "Plate", 1)
    experiment, = make_items(alice, "Experiment", 1)
    check_in(alice, box["id"], refs("Plate", [plate]))
    part = storage_part(html(browser.get(f"/entities/Plate/{plate}")))
    assert "Stored in Lab 2 / Freezer -80 / Rack 3 / Box 12 · A1" in text_of(part)
    assert f'action="/storage/items/Plate/{plate}/checkout"' in part
    assert storage_part(html(browser.get(f"/entities/Experiment/{experiment}"))) == ""
    assert STORED_CLASSES == set(STORABLE_CLASSES)


def test_a_sample_on_a_plate_is_stored_with_it(browser: FlaskClient, alice: ApiClient,
                                               box: dict) -> None:
    plate, = make_items(alice, "Plate", 1)
    sample, = make_items(alice, "Sample", 1, plateID=plate, well="B07")
    check_in(alice, box["id"], refs("Plate", [plate]))
    part = storage_part(html(browser.get(f"/entities/Sample/{sample}")))
    assert "Stored in Lab 2 / Freezer -80 / Rack 3 / Box 12" in text_of(part)
    assert "it is checked in and out with its plate" in text_of(part)
    assert 'id="checkout-form"' not in part and 'id="checkin-form"' not in part
    refused = post_form(browser, f"/storage/items/Sample/{sample}/checkout")
    assert refused.status_code == 409 and "stored with its plate" in html(refused)


def test_a_reader_sees_the_place_but_may_not_move_the_item(
        app, client: FlaskClient, alice: ApiClient, member, grant, department,
        box: dict) -> None:
    sample, = make_items(alice, "Sample", 1)
    check_in(alice, box["id"], refs("Sample", [sample]))
    member("rita", department_id=department("Elsewhere"))
    home = body_of(alice.get(f"/api/entity/Sample/{sample}"), 200)["departmentID"]
    grant.department(home, "Read", user="rita")
    assert page_login(client, "rita").status_code == 303
    part = storage_part(html(client.get(f"/entities/Sample/{sample}")))
    assert "Stored in Lab 2 / Freezer -80 / Rack 3 / Box 12 · A1" in text_of(part)
    assert 'id="checkout-form"' not in part and 'id="checkin-form"' not in part
    before = storage_snapshot(app)
    refused = post_form(client, f"/storage/items/Sample/{sample}/checkout")
    assert refused.status_code == 403 and "may read but not move" in html(refused)
    assert post_form(client, f"/storage/items/Sample/{sample}/checkin",
                     {"locationID": "BOX-12"}).status_code == 403
    assert storage_snapshot(app) == before


def test_an_item_one_may_not_see_is_404_and_a_visitor_must_log_in(
        app, client: FlaskClient, alice: ApiClient, member, department, box: dict) -> None:
    sample, = make_items(alice, "Sample", 1)
    check_in(alice, box["id"], refs("Sample", [sample]))
    client.get("/login")  # a visitor's session, with its CSRF token
    for action in ("checkin", "checkout"):
        visitor = post_form(client, f"/storage/items/Sample/{sample}/{action}")
        assert visitor.status_code == 302 and "/login" in visitor.headers["Location"]
    member("olga", department_id=department("Elsewhere"))
    assert page_login(client, "olga").status_code == 303
    before = storage_snapshot(app)
    for action, form in (("checkin", {"locationID": "BOX-12"}), ("checkout", {})):
        hidden = post_form(client, f"/storage/items/Sample/{sample}/{action}", form)
        unknown = post_form(client, f"/storage/items/Sample/NOPE/{action}", form)
        # Answered exactly as an id that never existed: nothing about the item leaks.
        assert hidden.status_code == unknown.status_code == 404
        assert html(hidden) == html(unknown).replace("NOPE", sample)
    assert storage_snapshot(app) == before


def test_only_a_move_to_a_final_status_asks_first(browser: FlaskClient,
                                                  alice: ApiClient) -> None:
    sample, = make_items(alice, "Sample", 1)
    request, = make_items(alice, "Request", 1)
    page = html(browser.get(f"/entities/Sample/{sample}"))
    forms = re.findall(r'<form method="post" action="[^"]+/status"(.*?)</form>', page, re.S)
    asking = {re.search(r'name="status" value="(\w+)"', form).group(1): 'data-confirm="' in form
              for form in forms}
    assert asking == {"InProgress": False, "Canceled": True, "Discarded": True}
    assert (f'data-confirm="Move Sample {sample} to Discarded? Discarded ends its '
            'work."') in page
    # A Request's Canceled and Rejected end its work too (they can only be reopened).
    request_forms = html(browser.get(f"/entities/Request/{request}")).split(
        'id="status-form"')[1].split("</div>")[0]
    assert 'to Canceled? Canceled ends its work."' in request_forms
    assert 'to InProgress?' not in request_forms
    moved = post_form(browser, f"/entities/Sample/{sample}/status",
                      {"status": "Discarded", "version": "1"})
    assert moved.status_code == 303
    assert body_of(alice.get(f"/api/entity/Sample/{sample}"), 200)["status"] == "Discarded"
    assert 'id="status-form"' not in html(browser.get(f"/entities/Sample/{sample}"))
