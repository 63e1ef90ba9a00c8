"""The entity forms place samples and plates only through storage (issue 19 §1): no
free-text location inputs; a create form offers the locations with room the user may store
into and the free slots of the chosen one; saving goes through the check-in rule."""
from __future__ import annotations

import re
from collections.abc import Callable

from tests.conftest import DEFAULT_DEPARTMENT, ApiClient

# The entity tests' factories: the administrator and departments.
from tests.entities.conftest import admin, department  # noqa: F401
from tests.helpers.pages import post_form
from tests.web.conftest import fetch, html_of, save


def options(html: str, select_id: str) -> list[tuple[str, str]]:
    """``(value, text)`` of the options of one select."""
    found = re.search(rf'<select id="{select_id}".*?</select>', html, re.S)
    assert found, f"no select {select_id}"
    return re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', found[0])


def test_no_free_text_place_inputs_on_the_forms(signed_in, api) -> None:
    new = html_of(signed_in.get("/entities/Sample/new"))
    assert '<input id="field-locationID"' not in new and '<input id="field-position"' not in new
    sample = save(api, {"eClass": "Sample", "name": "Broth"})[0]
    edit = html_of(signed_in.get(f"/entities/Sample/{sample['id']}/edit"))
    assert 'name="locationID"' not in edit and 'name="position"' not in edit
    plate = html_of(signed_in.get("/entities/Plate/new"))
    assert '<input id="field-locationID"' not in plate
    location = html_of(signed_in.get("/entities/Location/new"))
    assert '<input id="field-position" name="position"' in location  # a Location's own place


def test_the_picker_offers_room_and_free_slots_only(signed_in, api) -> None:
    box, full, shelf = save(api, {"eClass": "Location", "name": "Box 12", "rows": 2,
                                  "columns": 2},
                            {"eClass": "Location", "name": "Full rack", "capacity": 1},
                            {"eClass": "Location", "name": "Shelf"})
    save(api, {"eClass": "Sample", "locationID": full["id"]},
         {"eClass": "Sample", "locationID": box["id"], "position": "A2"})
    html = html_of(signed_in.get("/entities/Sample/new"))
    offered = dict(options(html, "field-locationID"))
    assert offered[box["id"]] == "Box 12 · 3 free"
    assert offered[shelf["id"]] == "Shelf · no limit"
    assert full["id"] not in offered
    assert options(html, "field-position") == [("", "No slot to choose")]
    fragment = html_of(signed_in.get(f"/entities/Sample/new/slots?locationID={box['id']}",
                                     headers={"HX-Request": "true"}))
    assert fragment.lstrip().startswith('<select id="field-position"')
    assert options(fragment, "field-position") == [("", "First free slot"), ("A1", "A1"),
                                                   ("B1", "B1"), ("B2", "B2")]
    prefilled = html_of(signed_in.get(f"/entities/Sample/new?locationID={box['id']}"))
    assert ("B1", "B1") in options(prefilled, "field-position")
    plain = signed_in.get(f"/entities/Sample/new/slots?locationID={box['id']}")
    assert plain.status_code == 302 and plain.headers["Location"].endswith(
        f"/entities/Sample/new?locationID={box['id']}")
    assert signed_in.get("/entities/Experiment/new/slots").status_code == 404


def test_a_slot_held_by_a_hidden_tube_is_never_offered(
        signed_in, api, admin: ApiClient,  # noqa: F811 (fixtures)
        department: Callable[..., str]) -> None:  # noqa: F811
    box = save(api, {"eClass": "Location", "name": "Shared box", "rows": 1,
                     "columns": 3})[0]
    other = department("Other lab")
    save(admin, {"eClass": "Sample", "name": "Theirs", "departmentID": other,
                     "locationID": box["id"], "position": "A2"})
    fragment = html_of(signed_in.get(f"/entities/Sample/new/slots?locationID={box['id']}",
                                     headers={"HX-Request": "true"}))
    assert [value for value, _ in options(fragment, "field-position")] == ["", "A1", "A3"]


def test_creating_through_the_picker_checks_in(signed_in, api) -> None:
    box = save(api, {"eClass": "Location", "name": "Box 12", "rows": 2, "columns": 2})[0]
    response = post_form(signed_in, "/entities/Sample/new", {
        "name": "Tube", "locationID": box["id"], "position": "B2",
        "departmentID": DEFAULT_DEPARTMENT})
    assert response.status_code == 303, html_of(response)
    stored = fetch(api, "Sample", response.headers["Location"].rsplit("/", 1)[1])
    assert (stored["locationID"], stored["position"]) == (box["id"], "B2")
    log = api.get(f"/api/storage/location/{box['id']}/log").get_json()["data"]
    assert [(row["action"], row["position"]) for row in log] == [("checkin", "B2")]
    taken = post_form(signed_in, "/entities/Sample/new", {
        "name": "Second", "locationID": box["id"], "position": "B2"})
    page = html_of(taken)
    assert taken.status_code == 409 and "slot B2" in page and "is taken" in page
    assert ("B2", "B2") not in options(page, "field-position")
    assert 'value="Second"' in page


def test_the_edit_forms_status_select_names_the_final_statuses(signed_in, api) -> None:
    sample = save(api, {"eClass": "Sample", "name": "Broth"})[0]
    edit = html_of(signed_in.get(f"/entities/Sample/{sample['id']}/edit"))
    assert 'data-confirm-values="Canceled Discarded"' in edit
    new = html_of(signed_in.get("/entities/Sample/new"))
    assert "data-confirm-values" not in new


def test_places_and_move_targets_are_listed_with_their_numbers_in_order(signed_in,
                                                                       api) -> None:
    """Issue 32 §5: "Box 3" before "Box 10" wherever locations are listed."""
    made = save(api, {"eClass": "Location", "id": "#rack", "name": "Rack 2"},
                *({"eClass": "Location", "name": f"Box {number}", "parentID": "#rack",
                   "capacity": 5} for number in (10, 3, 1, 20, 2)))
    html = html_of(signed_in.get("/entities/Sample/new"))
    boxes = [label.split(" · ")[0] for _, label in options(html, "field-locationID")
             if "Box" in label]
    assert boxes == [f"Rack 2 / Box {number}" for number in (1, 2, 3, 10, 20)]
    move = html_of(signed_in.get(f"/storage/locations/{made[1]['id']}/move"))
    targets = [label for _, label in re.findall(r'<option value="([^"]+)"[^>]*>([^<]*)</option>',
                                                move) if "Box" in label]
    assert targets == [f"Rack 2 / Box {number}" for number in (1, 2, 3, 20)]
