"""``POST /api/entity/{eClass}/{id}``: cloning with overrides (decisions §6)."""
from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from flask import Flask

from tests.conftest import DEFAULT_DEPARTMENT, ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import body_of, fetch, next_value, save, snapshot


@pytest.fixture
def source(admin: ApiClient) -> dict[str, Any]:
    """A completed sample with everything a clone copies and everything it must not."""
    save(admin, {"eClass": "Experiment", "id": "CL-EXP"},
         {"eClass": "Location", "id": "CL-BOX", "rows": 2, "columns": 2},
         {"eClass": "Sample", "id": "CL-PARENT"})
    save(admin, {"eClass": "Sample", "id": "CL-SRC", "name": "Serum", "description": "d",
                 "barcode": "BC-CL-SRC", "type": "Blood", "status": "Completed",
                 "amount": 3, "unit": "ml", "dateTaken": "2026-02-01", "well": "B07",
                 "experimentID": "CL-EXP", "parentID": "CL-PARENT", "locationID": "CL-BOX",
                 "position": "A1", "attributes": {"ph": 7, "batch": "B1", "lot": 3},
                 "notes": [{"content": "a note"}],
                 "files": [{"name": "f.txt", "content": base64.b64encode(b"x").decode()}]})
    save(admin, {"eClass": "Sample", "id": "CL-SRC", "amount": 4}, status=200)  # version 2
    return fetch(admin, "Sample", "CL-SRC")


def clone(api: ApiClient, path: str, overrides: Any = None, status: int = 201) -> dict:
    if overrides is None:
        return body_of(api.post(f"/api/entity/{path}"), status)
    return body_of(api.post(f"/api/entity/{path}", json=overrides), status)


def test_a_clone_is_a_new_entity_with_the_copied_fields(app: Flask, admin: ApiClient,
                                                        source: dict) -> None:
    expected_id = f"SAM{next_value(app, 'Sample'):05d}"
    copy = clone(admin, "Sample/CL-SRC")

    assert copy["id"] == expected_id
    assert copy["name"] == "Serum (copy)"
    assert copy["status"] == "Initial"
    assert copy["originID"] == "CL-SRC"
    for key in ("description", "type", "amount", "unit", "dateTaken", "well",
                "experimentID", "parentID", "departmentID", "attributes"):
        assert copy[key] == source[key], key
    assert copy["barcode"] is None
    assert copy["locationID"] is None and copy["position"] is None
    assert copy["version"] == 1
    assert copy["createdUtc"] >= source["modifiedUtc"] > source["createdUtc"]
    stored = fetch(admin, "Sample", copy["id"])
    assert {key: stored[key] for key in copy} == copy


def test_a_clone_has_its_own_history_without_notes_or_files(admin: ApiClient,
                                                            source: dict) -> None:
    copy = clone(admin, "Sample/CL-SRC")
    detail = fetch(admin, "Sample", copy["id"])

    assert detail["files"] == []
    assert [(event["kind"], event["data"]) for event in detail["events"]] == [
        ("Cloned", {"sourceID": "CL-SRC"}), ("Created", {})]
    (audit,) = detail["auditEvents"]
    assert audit["action"] == "create" and audit["version"] == 1
    assert audit["changes"]["originID"] == {"old": None, "new": "CL-SRC"}
    # The source is untouched.
    assert fetch(admin, "Sample", "CL-SRC") == source


def test_the_clone_belongs_to_its_maker(member, source: dict) -> None:
    alice = member("alice")
    copy = clone(alice, "Sample/CL-SRC")
    assert copy["createdBy"] == copy["modifiedBy"] == "alice"


def test_overrides_replace_copied_values(admin: ApiClient, source: dict) -> None:
    copy = clone(admin, "Sample/CL-SRC", {"name": "Aliquot", "amount": 0.5,
                                          "status": "InProgress", "barcode": "BC-CL-NEW",
                                          "originID": "CL-PARENT", "description": None})
    assert (copy["name"], copy["amount"], copy["status"]) == ("Aliquot", 0.5, "InProgress")
    assert copy["barcode"] == "BC-CL-NEW" and copy["originID"] == "CL-PARENT"
    assert copy["description"] is None


def test_attribute_overrides_are_merged(admin: ApiClient, source: dict) -> None:
    copy = clone(admin, "Sample/CL-SRC", {"attributes": {"ph": 8, "batch": None, "new": 1},
                                          "attributes.lot": None, "attributes.extra": "x"})
    assert copy["attributes"] == {"ph": 8, "new": 1, "extra": "x"}
    assert fetch(admin, "Sample", "CL-SRC")["attributes"] == {"ph": 7, "batch": "B1", "lot": 3}


def test_the_class_in_the_path_is_case_insensitive(admin: ApiClient, source: dict) -> None:
    copy = clone(admin, "sample/CL-SRC", {})
    assert copy["eClass"] == "Sample"


def test_an_explicit_new_id_is_used(admin: ApiClient, source: dict) -> None:
    assert clone(admin, "Sample/CL-SRC", {"id": "CL-MINE"})["id"] == "CL-MINE"


def test_an_existing_id_is_409_and_never_updates_it(app: Flask, admin: ApiClient,
                                                    source: dict) -> None:
    before = snapshot(app)
    response = admin.post("/api/entity/Sample/CL-SRC", json={"id": "CL-PARENT"})
    assert_problem(response, 409, "duplicate_id")
    assert snapshot(app) == before
    assert fetch(admin, "Sample", "CL-PARENT")["name"] == "CL-PARENT"


def test_a_fermentation_clone_keeps_its_origin_step(admin: ApiClient) -> None:
    save(admin, {"eClass": "Step", "id": "CL-STEP"},
         {"eClass": "Fermentation", "id": "CL-FER", "originID": "CL-STEP",
          "organism": "E. coli", "startTime": "2026-03-01T08:00:00Z"})
    copy = clone(admin, "Fermentation/CL-FER")
    assert re.fullmatch(r"FER\d{5}", copy["id"])
    assert copy["originID"] == "CL-STEP"
    assert copy["organism"] == "E. coli"
    assert copy["startTime"] == "2026-03-01T08:00:00.000Z"


@pytest.mark.parametrize(("eclass", "values"), [
    ("Experiment", {"startDate": "2026-01-01", "status": "Completed"}),
    ("Plate", {"rows": 16, "columns": 24}),
    ("Location", {"locationType": "Freezer", "capacity": 10, "temperature": -80}),
    ("Request", {"priority": "Urgent", "dueDate": "2026-05-01"}),
])
def test_other_classes_clone(admin: ApiClient, eclass: str, values: dict) -> None:
    (original,) = save(admin, {"eClass": eclass, "name": "Orig", **values})
    copy = clone(admin, f"{eclass}/{original['id']}")
    assert copy["eClass"] == eclass and copy["id"] != original["id"]
    assert copy["name"] == "Orig (copy)"
    assert copy["status"] == ("Active" if eclass == "Location" else "Initial")
    assert {key: copy[key] for key in values if key != "status"} == {
        key: original[key] for key in values if key != "status"}


# --- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "status", "code"), [
    ("Sample/CL-NOPE", 404, "not_found"),
    ("Experiment/CL-SRC", 404, "not_found"),
    ("Gadget/CL-SRC", 404, "unknown_class"),
])
def test_cloning_what_does_not_exist_is_404(app: Flask, admin: ApiClient, source: dict,
                                            path: str, status: int, code: str) -> None:
    before = snapshot(app)
    assert_problem(admin.post(f"/api/entity/{path}", json={}), status, code)
    assert snapshot(app) == before


@pytest.mark.parametrize(("overrides", "field"), [
    ({"colour": "red"}, "entities.0.colour"),
    ({"amount": "much"}, "entities.0.amount"),
    ({"status": "Lost"}, "entities.0.status"),
    ({"parentID": "CL-NOPE"}, "entities.0.parentID"),
    ({"experimentID": "CL-PARENT"}, "entities.0.experimentID"),
    ({"barcode": "BC-CL-SRC" * 20}, "entities.0.barcode"),
])
def test_bad_overrides_are_400_and_write_nothing(app: Flask, admin: ApiClient, source: dict,
                                                 overrides: dict, field: str) -> None:
    before = snapshot(app)
    response = admin.post("/api/entity/Sample/CL-SRC", json=overrides)
    body = assert_problem(response, 400, "invalid_entity", errors=True)
    assert body["errors"][0]["field"] == field
    assert snapshot(app) == before


def test_a_taken_barcode_override_is_409(app: Flask, admin: ApiClient, source: dict) -> None:
    before = snapshot(app)
    assert_problem(admin.post("/api/entity/Sample/CL-SRC", json={"barcode": "BC-CL-SRC"}),
                   409, "duplicate_barcode")
    assert snapshot(app) == before


@pytest.mark.parametrize(("body", "status", "code"), [
    ("[1, 2]", 400, "validation_failed"),
    ('{"name": 5}', 400, "validation_failed"),
    ('{"attributes": []}', 400, "validation_failed"),
    ("{", 400, "invalid_json"),
])
def test_a_malformed_body_is_400(admin: ApiClient, source: dict, body: str, status: int,
                                 code: str) -> None:
    response = admin.post("/api/entity/Sample/CL-SRC", data=body,
                          headers={"Content-Type": "application/json"})
    assert_problem(response, status, code, errors=code == "validation_failed")


def test_a_body_that_is_not_json_is_415(admin: ApiClient, source: dict) -> None:
    response = admin.post("/api/entity/Sample/CL-SRC", data='{"name": "x"}',
                          headers={"Content-Type": "text/plain"})
    assert_problem(response, 415, "unsupported_media_type")


# --- access --------------------------------------------------------------------------------

@pytest.fixture
def elsewhere(admin: ApiClient, department) -> str:
    """A sample in another department than alice's home."""
    other = department("Elsewhere")
    save(admin, {"eClass": "Sample", "id": "CL-AWAY", "departmentID": other,
                 "attributes": {"k": 1}})
    return other


def test_an_invisible_entity_cannot_be_cloned(app: Flask, member, elsewhere: str) -> None:
    alice = member("alice")
    before = snapshot(app)
    invisible = alice.post("/api/entity/Sample/CL-AWAY", json={})
    missing = alice.post("/api/entity/Sample/CL-NOPE", json={})
    assert_problem(invisible, 404, "not_found")
    assert_problem(missing, 404, "not_found")
    assert invisible.get_json()["detail"].replace("CL-AWAY", "X") == \
        missing.get_json()["detail"].replace("CL-NOPE", "X")
    assert snapshot(app) == before


def test_a_reader_clones_only_into_a_place_they_may_write(app: Flask, member, grant,
                                                          elsewhere: str) -> None:
    alice = member("alice")
    grant.department(elsewhere, "Read", user="alice")
    before = snapshot(app)
    assert_problem(alice.post("/api/entity/Sample/CL-AWAY", json={}), 403, "forbidden")
    assert snapshot(app) == before

    copy = clone(alice, "Sample/CL-AWAY", {"departmentID": DEFAULT_DEPARTMENT})
    assert copy["departmentID"] == DEFAULT_DEPARTMENT and copy["originID"] == "CL-AWAY"


def test_a_writer_clones_in_place(member, grant, elsewhere: str) -> None:
    alice = member("alice")
    grant.department(elsewhere, "Write", user="alice")
    copy = clone(alice, "Sample/CL-AWAY")
    assert copy["departmentID"] == elsewhere and copy["attributes"] == {"k": 1}


def test_cloning_needs_authentication(client, source: dict) -> None:
    assert_problem(client.post("/api/entity/Sample/CL-SRC", json={}), 401, "not_authenticated")
