"""Locations: the batch for Locations, reads with computed fields, parents and children."""
from __future__ import annotations

from tests.conftest import ApiClient
from tests.storage.conftest import body_of, check_in, make_items, make_locations, refs

COMPUTED = {"checkin", "checkout", "available", "stored", "hierarchy"}


def test_post_is_the_entity_batch_for_locations(admin: ApiClient) -> None:
    saved = make_locations(admin,
                           {"id": "#freezer", "name": "Freezer A", "locationType": "Freezer"},
                           {"id": "#rack", "name": "Rack 2", "parentID": "#freezer"},
                           {"eClass": "location", "name": "Box 5", "parentID": "#rack",
                            "rows": 9, "columns": 9, "capacity": 50})
    assert [loc["id"][:3] for loc in saved] == ["LOC"] * 3
    assert [loc["hierarchy"] for loc in saved] == [
        "Freezer A", "Freezer A / Rack 2", "Freezer A / Rack 2 / Box 5"]
    assert all(COMPUTED <= set(loc) and loc["eClass"] == "Location" for loc in saved)
    assert [loc["available"] for loc in saved] == [None, None, 50]
    updated = body_of(admin.post("/api/storage/location",
                                 json=[{"id": saved[2]["id"], "capacity": 60}]), 200)
    assert updated[0]["available"] == 60


def test_post_refuses_other_classes_and_bad_bodies(admin: ApiClient) -> None:
    for body, field in (([{"eClass": "Sample"}], "[0].eClass"), ([1], "[0]")):
        problem = body_of(admin.post("/api/storage/location", json=body), 400)
        assert problem["errors"][0]["field"] == field
    for body in ({"name": "x"}, []):
        assert admin.post("/api/storage/location", json=body).status_code == 400
    problem = body_of(admin.post("/api/storage/location",
                                 json=[{"name": "Box", "rows": 4}]), 400)
    assert "columns" in problem["detail"]


def test_get_list_parents_and_children(admin: ApiClient) -> None:
    site, room, box = make_locations(admin, {"id": "#s", "name": "Site"},
                                     {"id": "#r", "name": "Room", "parentID": "#s"},
                                     {"name": "Box", "parentID": "#r", "capacity": 3})
    check_in(admin, box["id"], refs("Sample", make_items(admin, "Sample", 2)))
    one = body_of(admin.get(f"/api/storage/location/{box['id']}"), 200)
    assert (one["stored"], one["available"], one["checkin"]) == (2, 1, 2)
    page = body_of(admin.get("/api/storage/location",
                             query_string={"$filter": f"parentID eq '{room['id']}'"}), 200)
    assert page["total"] == 1 and page["data"][0]["stored"] == 2
    assert page["nextSkip"] == 500
    parents = body_of(admin.get(f"/api/storage/location/{box['id']}/parents"), 200)
    assert [loc["id"] for loc in parents] == [site["id"], room["id"]]
    kids = body_of(admin.get(f"/api/storage/location/{site['id']}/children"), 200)
    assert [loc["id"] for loc in kids] == [room["id"]] and "stored" in kids[0]
    assert admin.get("/api/storage/location?$filter=nope eq 1").status_code == 400


def test_unknown_location_is_404_everywhere(admin: ApiClient) -> None:
    for suffix in ("", "/parents", "/children", "/log"):
        problem = body_of(admin.get(f"/api/storage/location/NO-SUCH{suffix}"), 404)
        assert problem["status"] == 404
    sample, = make_items(admin, "Sample", 1)
    assert admin.post("/api/storage/location/NO-SUCH/checkin",
                      json=refs("Sample", [sample])).status_code == 404


def test_log_is_newest_first_and_paged(admin: ApiClient) -> None:
    box, = make_locations(admin, {"name": "Box"})
    samples = make_items(admin, "Sample", 3)
    for sample in samples:
        check_in(admin, box["id"], refs("Sample", [sample]))
    page = body_of(admin.get(f"/api/storage/location/{box['id']}/log",
                             query_string={"$top": 2, "$skip": 0}), 200)
    assert [entry["entityID"] for entry in page["data"]] == samples[:0:-1]
    assert page["total"] == 3
    rest = body_of(admin.get(f"/api/storage/location/{box['id']}/log",
                             query_string={"$top": 2, "$skip": 2}), 200)
    assert [entry["entityID"] for entry in rest["data"]] == samples[:1]
    entry = rest["data"][0]
    assert set(entry) == {"id", "action", "eClass", "entityID", "locationID",
                          "fromLocationID", "position", "userID", "timestampUtc"}
    assert entry["timestampUtc"].endswith("Z")
    assert admin.get(f"/api/storage/location/{box['id']}/log?$top=-1").status_code == 400


def test_items_placed_by_the_entity_batch_count_and_are_logged(admin: ApiClient) -> None:
    """The batch checks items in (issue 19): counted and logged like /checkin."""
    box, = make_locations(admin, {"name": "Box", "capacity": 5})
    make_items(admin, "Sample", 2, locationID=box["id"])
    seen = body_of(admin.get(f"/api/storage/location/{box['id']}"), 200)
    assert (seen["stored"], seen["available"], seen["checkin"]) == (2, 3, 2)


def test_checkout_is_an_operation_not_a_location(admin: ApiClient) -> None:
    assert admin.get("/api/storage/location/checkout").status_code == 405
    make_locations(admin, {"id": "checkout-shelf", "name": "Shelf"})
    assert body_of(admin.get("/api/storage/location/checkout-shelf"), 200)["name"] == "Shelf"
