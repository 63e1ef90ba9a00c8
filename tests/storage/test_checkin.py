"""Check-in: one transaction, capacity and slots enforced, moves logged (decisions §10)."""
from __future__ import annotations

from flask import Flask

from tests.conftest import ApiClient
from tests.storage.conftest import (
    body_of,
    check_in,
    make_items,
    make_locations,
    refs,
    storage_snapshot,
)


def test_checkin_stores_items_and_answers_the_location(admin: ApiClient) -> None:
    freezer, = make_locations(admin, {"name": "Freezer A", "locationType": "Freezer"})
    samples = make_items(admin, "Sample", 3)
    answer = check_in(admin, freezer["id"], refs("Sample", samples))
    assert answer["id"] == freezer["id"]
    assert (answer["checkin"], answer["checkout"], answer["stored"], answer["available"]) \
        == (3, 0, 3, None)
    assert answer["hierarchy"] == "Freezer A"
    stored = body_of(admin.get(f"/api/entity/Sample/{samples[0]}"), 200)
    assert stored["locationID"] == freezer["id"] and stored["position"] is None
    assert stored["version"] == 2
    assert stored["events"][0]["kind"] == "CheckedIn"


def test_grid_slots_are_filled_in_order_and_a_position_is_kept(admin: ApiClient) -> None:
    box, = make_locations(admin, {"name": "Box", "rows": 2, "columns": 3})
    samples = make_items(admin, "Sample", 3)
    answer = check_in(admin, box["id"], [{"eClass": "Sample", "id": samples[0],
                                          "position": "a02"},
                                         *refs("Sample", samples[1:])])
    assert (answer["stored"], answer["available"]) == (3, 3)
    positions = [body_of(admin.get(f"/api/entity/Sample/{sample}"), 200)["position"]
                 for sample in samples]
    assert positions == ["A2", "A1", "A3"]


def test_moving_an_item_logs_a_checkout_there_and_a_checkin_here(admin: ApiClient) -> None:
    first, second = make_locations(admin, {"name": "One"}, {"name": "Two"})
    sample, = make_items(admin, "Sample", 1)
    check_in(admin, first["id"], refs("Sample", [sample]))
    answer = check_in(admin, second["id"], refs("Sample", [sample]))
    assert (answer["checkin"], answer["stored"]) == (1, 1)
    old = body_of(admin.get(f"/api/storage/location/{first['id']}"), 200)
    assert (old["checkin"], old["checkout"], old["stored"]) == (1, 1, 0)
    log = body_of(admin.get(f"/api/storage/location/{first['id']}/log"), 200)
    assert [entry["action"] for entry in log["data"]] == ["checkout", "checkin"]
    assert log["total"] == 2 and log["data"][0]["userID"] == "admin"


def test_a_full_location_refuses_the_whole_request(app: Flask, admin: ApiClient) -> None:
    rack, = make_locations(admin, {"name": "Rack", "capacity": 2})
    samples = make_items(admin, "Sample", 3)
    before = storage_snapshot(app)
    response = admin.post(f"/api/storage/location/{rack['id']}/checkin",
                          json=refs("Sample", samples))
    problem = body_of(response, 409)
    assert problem["code"] == "location_full" and samples[2] in problem["detail"]
    assert "[2]" in problem["detail"]
    assert storage_snapshot(app) == before


def test_a_taken_slot_is_409_naming_the_item(app: Flask, admin: ApiClient) -> None:
    box, = make_locations(admin, {"name": "Box", "rows": 8, "columns": 12})
    samples = make_items(admin, "Sample", 2)
    check_in(admin, box["id"], [{"eClass": "Sample", "id": samples[0], "position": "B7"}])
    before = storage_snapshot(app)
    problem = check_in(admin, box["id"], [{"eClass": "Sample", "id": samples[1],
                                           "position": "b07"}], status=409)
    assert problem["code"] == "slot_taken" and "[0]" in problem["detail"]
    assert storage_snapshot(app) == before


def test_positions_outside_the_grid_or_without_one_are_400(admin: ApiClient) -> None:
    box, shelf = make_locations(admin, {"name": "Box", "rows": 8, "columns": 12},
                                {"name": "Shelf"})
    sample, = make_items(admin, "Sample", 1)
    for location, position in ((box, "I1"), (box, "A13"), (box, "7B"), (shelf, "A1")):
        problem = check_in(admin, location["id"], [{"eClass": "Sample", "id": sample,
                                                    "position": position}], status=400)
        assert problem["errors"][0]["field"] == "[0].position"


def test_plates_carry_their_samples(admin: ApiClient) -> None:
    first, second = make_locations(admin, {"name": "One"}, {"name": "Two"})
    plate, = make_items(admin, "Plate", 1)
    on_plate = make_items(admin, "Sample", 2, plateID=plate)
    check_in(admin, first["id"], refs("Plate", [plate]))
    answer = check_in(admin, second["id"], refs("Plate", [plate]))
    assert answer["stored"] == 1
    for sample in on_plate:
        assert body_of(admin.get(f"/api/entity/Sample/{sample}"), 200)["locationID"] \
            == second["id"]
    problem = check_in(admin, first["id"], refs("Sample", on_plate[:1]), status=409)
    assert problem["code"] == "on_plate"


def test_checkin_again_in_place_changes_nothing(app: Flask, admin: ApiClient) -> None:
    box, = make_locations(admin, {"name": "Box", "rows": 1, "columns": 2})
    sample, = make_items(admin, "Sample", 1)
    check_in(admin, box["id"], refs("Sample", [sample]))
    before = storage_snapshot(app)
    assert check_in(admin, box["id"], refs("Sample", [sample]))["checkin"] == 1
    assert storage_snapshot(app) == before


def test_an_inactive_location_takes_nothing(app: Flask, admin: ApiClient) -> None:
    shelf, = make_locations(admin, {"name": "Old shelf", "status": "Inactive"})
    sample, = make_items(admin, "Sample", 1)
    before = storage_snapshot(app)
    problem = check_in(admin, shelf["id"], refs("Sample", [sample]), status=409)
    assert problem["code"] == "location_inactive"
    assert storage_snapshot(app) == before


def test_a_sample_moved_within_its_box_is_logged_out_and_in(admin: ApiClient) -> None:
    box, = make_locations(admin, {"name": "Box", "rows": 2, "columns": 2})
    sample, = make_items(admin, "Sample", 1)
    check_in(admin, box["id"], [{"eClass": "Sample", "id": sample, "position": "A1"}])
    answer = check_in(admin, box["id"], [{"eClass": "Sample", "id": sample,
                                          "position": "B2"}])
    assert (answer["stored"], answer["checkin"], answer["checkout"]) == (1, 2, 1)
    entries = body_of(admin.get(f"/api/storage/location/{box['id']}/log"), 200)["data"]
    assert [(e["action"], e["position"]) for e in entries] == [
        ("checkin", "B2"), ("checkout", "A1"), ("checkin", "A1")]
