"""Check-out of many items in one request."""
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


def checkout(api: ApiClient, items: list[dict[str, str]], status: int = 200):
    return body_of(api.post("/api/storage/location/checkout", json=items), status)


def test_checkout_from_one_location_answers_it(admin: ApiClient) -> None:
    box, = make_locations(admin, {"name": "Box", "rows": 2, "columns": 2})
    samples = make_items(admin, "Sample", 3)
    check_in(admin, box["id"], refs("Sample", samples))
    answer = checkout(admin, refs("Sample", samples[:2]))
    assert answer["id"] == box["id"]
    assert (answer["checkout"], answer["stored"], answer["available"]) == (2, 1, 3)
    stored = body_of(admin.get(f"/api/entity/Sample/{samples[0]}"), 200)
    assert stored["locationID"] is None and stored["position"] is None
    assert stored["events"][0]["kind"] == "CheckedOut"


def test_checkout_from_several_locations_answers_all(admin: ApiClient) -> None:
    first, second = make_locations(admin, {"name": "One"}, {"name": "Two"})
    sample, = make_items(admin, "Sample", 1)
    plate, = make_items(admin, "Plate", 1)
    on_plate, = make_items(admin, "Sample", 1, plateID=plate)
    check_in(admin, first["id"], refs("Sample", [sample]))
    check_in(admin, second["id"], refs("Plate", [plate]))
    answer = checkout(admin, [*refs("Sample", [sample]), *refs("Plate", [plate])])
    assert sorted(loc["id"] for loc in answer["locations"]) == sorted([first["id"],
                                                                        second["id"]])
    assert body_of(admin.get(f"/api/entity/Sample/{on_plate}"), 200)["locationID"] is None


def test_checkout_of_something_not_stored_changes_nothing(app: Flask,
                                                          admin: ApiClient) -> None:
    box, = make_locations(admin, {"name": "Box"})
    samples = make_items(admin, "Sample", 2)
    check_in(admin, box["id"], refs("Sample", samples[:1]))
    before = storage_snapshot(app)
    problem = checkout(admin, refs("Sample", samples), status=409)
    assert problem["code"] == "not_stored" and "[1]" in problem["detail"]
    assert storage_snapshot(app) == before
