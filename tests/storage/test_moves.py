"""Moving a location: everything inside moves with it, paths refresh, cycles are 409."""
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


def move(api: ApiClient, location_id: str, parent_id: str | None, status: int = 200):
    return body_of(api.post("/api/entity", json={"entities": [
        {"eClass": "Location", "id": location_id, "parentID": parent_id}]}), status)


def tree(admin: ApiClient) -> dict[str, dict]:
    saved = make_locations(
        admin, {"id": "#f", "name": "Freezer A"}, {"id": "#r1", "name": "Rack 1",
                                                   "parentID": "#f"},
        {"id": "#r2", "name": "Rack 2", "parentID": "#f"},
        {"id": "#b", "name": "Box 5", "parentID": "#r1", "rows": 2, "columns": 2},
        {"id": "#t", "name": "Tube rack", "parentID": "#b"})
    return dict(zip(("freezer", "rack1", "rack2", "box", "tube"), saved, strict=True))


def path(admin: ApiClient, location_id: str) -> str:
    return body_of(admin.get(f"/api/storage/location/{location_id}"), 200)["hierarchy"]


def test_moving_a_box_moves_its_contents_and_refreshes_paths(admin: ApiClient) -> None:
    places = tree(admin)
    samples = make_items(admin, "Sample", 2)
    check_in(admin, places["box"]["id"], refs("Sample", samples))
    moved = move(admin, places["box"]["id"], places["rack2"]["id"])["entities"][0]
    assert moved["hierarchy"] == "Freezer A / Rack 2 / Box 5"
    assert path(admin, places["tube"]["id"]) == "Freezer A / Rack 2 / Box 5 / Tube rack"
    box = body_of(admin.get(f"/api/storage/location/{places['box']['id']}"), 200)
    assert box["stored"] == 2 and box["parentID"] == places["rack2"]["id"]
    for location, relation in ((places["rack1"], "fromLocationID"),
                               (places["rack2"], "locationID"), (places["box"], "entityID")):
        entries = body_of(admin.get(f"/api/storage/location/{location['id']}/log"),
                          200)["data"]
        moves = [entry for entry in entries if entry["action"] == "move"]
        assert len(moves) == 1 and moves[0][relation] == location["id"]
        assert moves[0]["entityID"] == places["box"]["id"]


def test_a_location_cannot_become_its_own_ancestor(app: Flask, admin: ApiClient) -> None:
    places = tree(admin)
    before = storage_snapshot(app)
    for target in ("box", "tube"):
        problem = move(admin, places["freezer"]["id"], places[target]["id"], status=409)
        assert problem["code"] == "location_cycle"
    # Its own parent: refused by the batch before any storage rule runs.
    assert move(admin, places["freezer"]["id"], places["freezer"]["id"], status=400)
    problem = move(admin, places["rack1"]["id"], places["tube"]["id"], status=409)
    assert problem["code"] == "location_cycle"
    assert storage_snapshot(app) == before
    assert path(admin, places["tube"]["id"]) == "Freezer A / Rack 1 / Box 5 / Tube rack"


def test_renaming_refreshes_descendants_and_moving_to_the_top(admin: ApiClient) -> None:
    places = tree(admin)
    body_of(admin.post("/api/entity", json={"entities": [
        {"eClass": "Location", "id": places["freezer"]["id"], "name": "Freezer B"}]}), 200)
    assert path(admin, places["tube"]["id"]) == "Freezer B / Rack 1 / Box 5 / Tube rack"
    move(admin, places["box"]["id"], None)
    assert path(admin, places["tube"]["id"]) == "Box 5 / Tube rack"


def test_a_grid_or_capacity_that_no_longer_fits_is_409(admin: ApiClient) -> None:
    places = tree(admin)
    samples = make_items(admin, "Sample", 2)
    check_in(admin, places["box"]["id"], [{"eClass": "Sample", "id": samples[0],
                                           "position": "B2"},
                                          {"eClass": "Sample", "id": samples[1]}])
    box_id = places["box"]["id"]
    for change, code in (({"rows": 1}, "slots_in_use"), ({"capacity": 1}, "capacity_in_use")):
        problem = body_of(admin.post("/api/entity", json={"entities": [
            {"eClass": "Location", "id": box_id, **change}]}), 409)
        assert problem["code"] == code
    body_of(admin.post("/api/entity", json={"entities": [
        {"eClass": "Location", "id": box_id, "rows": 3, "columns": 3}]}), 200)
