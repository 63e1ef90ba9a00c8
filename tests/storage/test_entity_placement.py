"""Every path of the entity batch that sets where an item is goes through the check-in rule
(issue 19 §1): create, update, clone and batches, with the errors, log and events of
``/checkin``; refusals leave everything as it was."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from tests.conftest import ApiClient
from tests.entities.conftest import Grants
from tests.storage.conftest import (
    body_of,
    check_in,
    make_items,
    make_locations,
    refs,
    storage_snapshot,
)


def save(api: ApiClient, *items: dict[str, Any], status: int = 201) -> Any:
    return body_of(api.post("/api/entity", json={"entities": list(items)}), status)


def entity(api: ApiClient, eclass: str, entity_id: str) -> dict[str, Any]:
    return body_of(api.get(f"/api/entity/{eclass}/{entity_id}"), 200)


def log_of(api: ApiClient, location_id: str) -> list[tuple[str, str, str | None]]:
    """``(action, entityID, position)`` of a location's log, oldest first."""
    data = body_of(api.get(f"/api/storage/location/{location_id}/log"), 200)["data"]
    return [(row["action"], row["entityID"], row["position"]) for row in reversed(data)]


def events_of(api: ApiClient, eclass: str, entity_id: str) -> list[str]:
    return [event["kind"] for event in entity(api, eclass, entity_id)["events"]]


@pytest.fixture
def box(admin: ApiClient) -> dict[str, Any]:
    """A 2 × 2 box."""
    return make_locations(admin, {"name": "Box 12", "rows": 2, "columns": 2})[0]


def test_create_into_a_box_takes_a_free_slot_and_is_logged(admin: ApiClient,
                                                           box: dict[str, Any]) -> None:
    first, second = save(admin, {"eClass": "Sample", "name": "a", "locationID": box["id"]},
                         {"eClass": "Sample", "name": "b", "locationID": box["id"],
                          "position": "b02"})["entities"]
    assert (first["locationID"], first["position"], first["version"]) == (box["id"], "A1", 1)
    assert (second["position"], second["version"]) == ("B2", 1)
    assert log_of(admin, box["id"]) == [("checkin", first["id"], "A1"),
                                        ("checkin", second["id"], "B2")]
    assert "CheckedIn" in events_of(admin, "Sample", first["id"])
    created = entity(admin, "Sample", second["id"])["auditEvents"][-1]
    assert created["action"] == "create"
    assert created["changes"]["position"] == {"old": None, "new": "B2"}
    assert body_of(admin.get(f"/api/storage/location/{box['id']}"), 200)["stored"] == 2


def test_create_into_a_taken_slot_is_refused_and_writes_nothing(
        app: Flask, admin: ApiClient, box: dict[str, Any]) -> None:
    holder, = make_items(admin, "Sample", 1)
    check_in(admin, box["id"], [{"eClass": "Sample", "id": holder, "position": "A2"}])
    before = storage_snapshot(app)
    refused = save(admin, {"eClass": "Sample", "name": "ok"},
                   {"eClass": "Sample", "locationID": box["id"], "position": "A2"},
                   status=409)
    assert refused["code"] == "slot_taken"
    assert refused["detail"].startswith("entities[1]: slot A2")
    assert storage_snapshot(app) == before


@pytest.mark.parametrize(("item", "status", "code", "field"), [
    ({"position": "C1"}, 400, "invalid_storage_item", "entities.0.position"),
    ({"position": "nonsense"}, 400, "invalid_storage_item", "entities.0.position"),
])
def test_a_position_outside_the_grid_is_400(app: Flask, admin: ApiClient, box: dict[str, Any],
                                            item: dict, status: int, code: str,
                                            field: str) -> None:
    before = storage_snapshot(app)
    refused = save(admin, {"eClass": "Sample", "locationID": box["id"], **item}, status=status)
    assert refused["code"] == code
    assert [error["field"] for error in refused["errors"]] == [field]
    assert storage_snapshot(app) == before


def test_a_position_needs_a_location(admin: ApiClient) -> None:
    refused = save(admin, {"eClass": "Sample", "position": "A1"}, status=400)
    assert refused["errors"] == [{"field": "entities.0.position",
                                  "message": "a position needs a locationID"}]
    sample, = make_items(admin, "Sample", 1)
    save(admin, {"eClass": "Sample", "id": sample, "position": "A1"}, status=400)


def test_more_items_than_room_is_409_and_nothing_is_created(app: Flask, admin: ApiClient,
                                                            box: dict[str, Any]) -> None:
    before = storage_snapshot(app)
    refused = save(admin, *({"eClass": "Sample", "locationID": box["id"]} for _ in range(5)),
                   status=409)
    assert (refused["code"], refused["detail"][:12]) == ("location_full", "entities[4]:")
    assert storage_snapshot(app) == before
    rack, = make_locations(admin, {"name": "Rack", "capacity": 1})
    save(admin, {"eClass": "Plate", "locationID": rack["id"]})
    assert save(admin, {"eClass": "Sample", "locationID": rack["id"]},
                status=409)["code"] == "location_full"


def test_an_inactive_location_takes_nothing(admin: ApiClient) -> None:
    shelf, = make_locations(admin, {"name": "Old shelf", "status": "Inactive"})
    assert save(admin, {"eClass": "Sample", "locationID": shelf["id"]},
                status=409)["code"] == "location_inactive"
    assert save(admin, {"eClass": "Location", "id": "NEW-OFF", "status": "Inactive"},
                {"eClass": "Sample", "locationID": "NEW-OFF"},
                status=409)["code"] == "location_inactive"


def test_the_callers_right_to_the_location(admin: ApiClient, department: Callable[..., str],
                                           member: Callable[..., ApiClient],
                                           grant: Grants) -> None:
    hidden_dep, read_dep = department("Hidden"), department("Read only")
    hidden, readonly = make_locations(admin, {"name": "Hidden", "departmentID": hidden_dep},
                                      {"name": "Read only", "departmentID": read_dep})
    alice = member("alice")
    grant.department(read_dep, "Read", user="alice")
    refused = save(alice, {"eClass": "Sample", "locationID": readonly["id"]}, status=403)
    assert readonly["id"] in refused["detail"]
    unseen = save(alice, {"eClass": "Sample", "locationID": hidden["id"]}, status=400)
    assert unseen["errors"][0]["field"] == "entities.0.locationID"
    sample, = make_items(alice, "Sample", 1)
    save(alice, {"eClass": "Sample", "id": sample, "locationID": readonly["id"]}, status=403)
    assert entity(alice, "Sample", sample)["locationID"] is None


def test_update_moves_checks_out_and_is_logged_as_check_out_and_in(
        admin: ApiClient, box: dict[str, Any]) -> None:
    other, = make_locations(admin, {"name": "Box 13", "rows": 2, "columns": 2})
    sample = save(admin, {"eClass": "Sample", "locationID": box["id"]})["entities"][0]
    moved = save(admin, {"eClass": "Sample", "id": sample["id"], "locationID": other["id"],
                         "position": "B1", "version": 1}, status=200)["entities"][0]
    assert (moved["locationID"], moved["position"], moved["version"]) == (other["id"], "B1", 2)
    assert log_of(admin, box["id"])[-1] == ("checkout", sample["id"], "A1")
    assert log_of(admin, other["id"]) == [("checkin", sample["id"], "B1")]
    audit = entity(admin, "Sample", sample["id"])["auditEvents"][0]
    assert audit["changes"]["locationID"] == {"old": box["id"], "new": other["id"]}
    within = save(admin, {"eClass": "Sample", "id": sample["id"], "position": "a2"},
                  status=200)["entities"][0]
    assert (within["locationID"], within["position"], within["version"]) == (other["id"],
                                                                             "A2", 3)
    assert log_of(admin, other["id"])[-2:] == [("checkout", sample["id"], "B1"),
                                               ("checkin", sample["id"], "A2")]
    out = save(admin, {"eClass": "Sample", "id": sample["id"], "locationID": None},
               status=200)["entities"][0]
    assert (out["locationID"], out["position"]) == (None, None)
    assert log_of(admin, other["id"])[-1] == ("checkout", sample["id"], "A2")
    assert events_of(admin, "Sample", sample["id"]).count("CheckedOut") == 3


def test_sending_the_stored_place_back_changes_nothing(admin: ApiClient,
                                                       box: dict[str, Any]) -> None:
    sample = save(admin, {"eClass": "Sample", "locationID": box["id"]})["entities"][0]
    back = save(admin, {**{k: v for k, v in sample.items()
                           if k not in {"createdUtc", "modifiedUtc"}}}, status=200)
    assert back["entities"][0]["version"] == 1
    assert log_of(admin, box["id"]) == [("checkin", sample["id"], "A1")]


def test_a_sample_on_a_plate_is_stored_with_its_plate(admin: ApiClient,
                                                      box: dict[str, Any]) -> None:
    shelf, = make_locations(admin, {"name": "Shelf"})
    plate = save(admin, {"eClass": "Plate", "locationID": shelf["id"]})["entities"][0]
    refused = save(admin, {"eClass": "Sample", "plateID": plate["id"],
                           "locationID": box["id"]}, status=409)
    assert refused["code"] == "on_plate"
    on_plate = save(admin, {"eClass": "Sample", "plateID": plate["id"]})["entities"][0]
    save(admin, {"eClass": "Plate", "id": plate["id"], "locationID": box["id"],
                 "position": "B2"}, status=200)
    carried = entity(admin, "Sample", on_plate["id"])
    assert (carried["locationID"], carried["position"]) == (box["id"], None)
    save(admin, {"eClass": "Sample", "id": on_plate["id"], "name": "renamed",
                 "locationID": box["id"]}, status=200)
    assert save(admin, {"eClass": "Sample", "id": on_plate["id"], "locationID": shelf["id"]},
                status=409)["code"] == "on_plate"


def test_a_batch_may_fill_the_box_it_creates(admin: ApiClient) -> None:
    saved = save(admin, {"eClass": "Location", "id": "#box", "name": "New box", "rows": 1,
                         "columns": 2},
                 {"eClass": "Sample", "locationID": "#box"},
                 {"eClass": "Sample", "locationID": "#box"})["entities"]
    box_id = saved[0]["id"]
    assert [(s["locationID"], s["position"]) for s in saved[1:]] == [(box_id, "A1"),
                                                                     (box_id, "A2")]
    assert body_of(admin.get(f"/api/storage/location/{box_id}"), 200)["checkin"] == 2
    assert save(admin, {"eClass": "Location", "id": "#b", "rows": 1, "columns": 1},
                {"eClass": "Sample", "locationID": "#b"},
                {"eClass": "Plate", "locationID": "#b"}, status=409)["code"] == "location_full"


def test_samples_and_plates_of_one_batch_never_share_a_slot(admin: ApiClient,
                                                            box: dict[str, Any]) -> None:
    saved = save(admin, {"eClass": "Plate", "locationID": box["id"]},
                 {"eClass": "Sample", "locationID": box["id"]},
                 {"eClass": "Plate", "locationID": box["id"]})["entities"]
    assert sorted(item["position"] for item in saved) == ["A1", "A2", "B1"]


def test_clone_goes_through_the_check_in_rule(admin: ApiClient, box: dict[str, Any]) -> None:
    source = save(admin, {"eClass": "Sample", "name": "Serum", "locationID": box["id"],
                          "position": "A1"})["entities"][0]
    copy = body_of(admin.post(f"/api/entity/Sample/{source['id']}"), 201)
    assert (copy["locationID"], copy["position"]) == (None, None)
    taken = body_of(admin.post(f"/api/entity/Sample/{source['id']}",
                               json={"locationID": box["id"], "position": "A1"}), 409)
    assert taken["code"] == "slot_taken"
    placed = body_of(admin.post(f"/api/entity/Sample/{source['id']}",
                                json={"locationID": box["id"], "position": "B1"}), 201)
    assert placed["position"] == "B1"
    assert ("checkin", placed["id"], "B1") in log_of(admin, box["id"])


def test_check_in_and_the_batch_see_each_other(admin: ApiClient, box: dict[str, Any]) -> None:
    sample = save(admin, {"eClass": "Sample", "locationID": box["id"],
                          "position": "A1"})["entities"][0]
    other, = make_items(admin, "Sample", 1)
    answer = body_of(admin.post(f"/api/storage/location/{box['id']}/checkin",
                                json=[{"eClass": "Sample", "id": other, "position": "A1"}]),
                     409)
    assert answer["code"] == "slot_taken"
    check_in(admin, box["id"], refs("Sample", [other]))
    assert entity(admin, "Sample", other)["position"] == "A2"
    assert sample["position"] == "A1"


@pytest.mark.parametrize(("eclass", "extra"), [("Sample", {}), ("StepInput", {})])
def test_negative_amounts_are_refused(app: Flask, admin: ApiClient, eclass: str,
                                      extra: dict) -> None:
    before = storage_snapshot(app)
    refused = save(admin, {"eClass": eclass, "amount": -5, **extra}, status=400)
    assert refused["errors"] == [{"field": "entities.0.amount",
                                  "message": "must not be less than 0"}]
    assert storage_snapshot(app) == before
    assert save(admin, {"eClass": eclass, "amount": 0})["entities"][0]["amount"] == 0
    stored = save(admin, {"eClass": eclass, "amount": 2.5})["entities"][0]
    save(admin, {"eClass": eclass, "id": stored["id"], "amount": -0.1}, status=400)


def test_a_slot_an_item_of_the_same_batch_leaves_is_free(admin: ApiClient,
                                                         box: dict[str, Any]) -> None:
    other, = make_locations(admin, {"name": "Box 13", "rows": 2, "columns": 2})
    leaving = save(admin, {"eClass": "Sample", "locationID": box["id"],
                           "position": "A1"})["entities"][0]
    saved = save(admin, {"eClass": "Sample", "id": leaving["id"], "locationID": other["id"]},
                 {"eClass": "Sample", "name": "new", "locationID": box["id"],
                  "position": "A1"})["entities"]
    assert [(s["locationID"], s["position"]) for s in saved] == [(other["id"], "A1"),
                                                                 (box["id"], "A1")]
    assert log_of(admin, box["id"])[-2:] == [("checkout", leaving["id"], "A1"),
                                             ("checkin", saved[1]["id"], "A1")]


def test_a_position_spelled_otherwise_in_a_read_only_location_stays(
        admin: ApiClient, member: Callable[..., ApiClient], department: Callable[..., str],
        grant: Grants) -> None:
    """Sending back the slot an item holds, however spelled, leaves it alone: its location
    is not even looked at (the dry run of an import decides it the same way)."""
    shelf_dep, own = department("Read only"), department("Own")
    alice = member("alice", department_id=own)
    grant.department(shelf_dep, "Read", user="alice")
    grant.department(own, "Write", user="alice")
    shut, = make_locations(admin, {"name": "Shut box", "rows": 2, "columns": 2,
                                   "departmentID": shelf_dep})
    sample = save(admin, {"eClass": "Sample", "departmentID": own, "locationID": shut["id"],
                          "position": "B2"})["entities"][0]
    kept = save(alice, {"eClass": "Sample", "id": sample["id"], "locationID": shut["id"],
                        "position": "b02", "name": "renamed"}, status=200)["entities"][0]
    assert (kept["position"], kept["name"]) == ("B2", "renamed")
    save(alice, {"eClass": "Sample", "id": sample["id"], "position": "A1"}, status=403)
