"""``POST /api/entity`` updating stored entities: partial changes, attributes, version,
status transitions, audit trail and events."""
from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from tests.conftest import DEFAULT_DEPARTMENT, ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import fetch, save, snapshot


@pytest.fixture
def alice(member) -> ApiClient:
    return member("alice")


@pytest.fixture
def sample(alice: ApiClient) -> dict[str, Any]:
    (created,) = save(alice, {"eClass": "Sample", "id": "UPD-1", "name": "Original",
                              "description": "keep me", "amount": 5, "unit": "ml",
                              "attributes": {"a": 1, "b": 2, "c": 3}})
    return created


def update(api: ApiClient, **values: Any) -> dict[str, Any]:
    (saved,) = save(api, {"eClass": "Sample", "id": "UPD-1", **values}, status=200)
    return saved


def test_only_the_given_properties_change(admin: ApiClient, alice: ApiClient,
                                          sample: dict) -> None:
    saved = update(admin, name="Renamed", amount=None)

    assert saved["name"] == "Renamed" and saved["amount"] is None
    unchanged = {key: value for key, value in sample.items()
                 if key not in {"name", "amount", "version", "modifiedBy", "modifiedUtc"}}
    assert {key: saved[key] for key in unchanged} == unchanged
    assert saved["version"] == 2
    assert saved["createdBy"] == "alice" and saved["modifiedBy"] == "admin"
    assert saved["modifiedUtc"] >= saved["createdUtc"] == sample["createdUtc"]
    stored = fetch(alice, "Sample", "UPD-1")
    assert {key: stored[key] for key in saved} == saved


def test_a_batch_of_updates_answers_200_and_a_mixed_one_201(alice: ApiClient,
                                                            sample: dict) -> None:
    response = alice.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": "UPD-1", "unit": "l"}]})
    assert response.status_code == 200
    response = alice.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": "UPD-1", "unit": "ul"}, {"eClass": "Sample"}]})
    assert response.status_code == 201
    updated, created = response.get_json()["entities"]
    assert updated["unit"] == "ul" and updated["version"] == 3
    assert created["version"] == 1


def test_every_change_adds_one_version(alice: ApiClient, sample: dict) -> None:
    versions = [update(alice, amount=amount)["version"] for amount in (6, 7, 8)]
    assert versions == [2, 3, 4]


def test_an_update_that_changes_nothing_keeps_the_version(alice: ApiClient,
                                                          sample: dict) -> None:
    saved = update(alice, name="Original", amount=5.0, attributes={"a": 1},
                   createdBy="mallory", createdUtc="2000-01-01T00:00:00Z",
                   modifiedBy="mallory", accessType="Write", canWrite=True, events=[],
                   auditEvents=[])
    assert saved["version"] == 1 and saved["modifiedUtc"] == sample["modifiedUtc"]
    assert saved["createdBy"] == "alice"
    detail = fetch(alice, "Sample", "UPD-1")
    assert [audit["action"] for audit in detail["auditEvents"]] == ["create"]


def test_fetch_merge_save_works_with_the_read_entity(alice: ApiClient, sample: dict) -> None:
    detail = fetch(alice, "Sample", "UPD-1")
    detail["name"] = "Merged"
    saved = update(alice, **{key: value for key, value in detail.items() if key != "id"})
    assert saved["name"] == "Merged" and saved["version"] == 2
    assert saved["description"] == "keep me"
    (audit, _) = fetch(alice, "Sample", "UPD-1")["auditEvents"]
    assert audit["changes"] == {"name": {"old": "Original", "new": "Merged"}}


# --- attributes ----------------------------------------------------------------------------

def test_attributes_are_merged_key_by_key(alice: ApiClient, sample: dict) -> None:
    saved = update(alice, attributes={"b": 20, "c": None, "d": {"nested": True}})
    assert saved["attributes"] == {"a": 1, "b": 20, "d": {"nested": True}}


def test_dot_keys_change_one_attribute(alice: ApiClient, sample: dict) -> None:
    saved = update(alice, **{"attributes.a": None, "attributes.e": "new", "attributes.b": 2.5})
    assert saved["attributes"] == {"b": 2.5, "c": 3, "e": "new"}


def test_dot_keys_win_over_the_attributes_object(alice: ApiClient, sample: dict) -> None:
    saved = update(alice, **{"attributes": {"a": "object", "f": 1}, "attributes.a": "dot"})
    assert saved["attributes"] == {"a": "dot", "b": 2, "c": 3, "f": 1}


def test_attribute_changes_are_audited(alice: ApiClient, sample: dict) -> None:
    update(alice, **{"attributes.c": None})
    audit = fetch(alice, "Sample", "UPD-1")["auditEvents"][0]
    assert audit["changes"] == {"attributes": {"old": {"a": 1, "b": 2, "c": 3},
                                               "new": {"a": 1, "b": 2}}}


def test_attributes_on_create_take_dot_keys_and_drop_nulls(alice: ApiClient) -> None:
    (created,) = save(alice, {"eClass": "Sample", "attributes": {"x": 1, "gone": None},
                              "attributes.y": "two", "attributes.z": None})
    assert created["attributes"] == {"x": 1, "y": "two"}


# --- version -------------------------------------------------------------------------------

def test_a_matching_version_lets_the_update_through(alice: ApiClient, sample: dict) -> None:
    assert update(alice, name="First", version=1)["version"] == 2
    assert update(alice, name="Second", version=2)["version"] == 3


def test_a_stale_version_is_409_and_changes_nothing(app: Flask, alice: ApiClient,
                                                    sample: dict) -> None:
    update(alice, name="Theirs")
    before = snapshot(app)
    response = alice.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": "UPD-1", "name": "Mine", "version": 1}]})
    body = assert_problem(response, 409, "stale_version")
    assert "entities[0]" in body["detail"] and "version 2" in body["detail"]
    assert snapshot(app) == before
    assert fetch(alice, "Sample", "UPD-1")["name"] == "Theirs"


@pytest.mark.parametrize("version", [0, -1, "1", 1.5, True, None, [1]])
def test_a_malformed_version_is_400(app: Flask, alice: ApiClient, sample: dict,
                                    version: Any) -> None:
    before = snapshot(app)
    response = alice.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": "UPD-1", "name": "x", "version": version}]})
    body = assert_problem(response, 400, "invalid_entity", errors=True)
    assert body["errors"][0]["field"] == "entities.0.version"
    assert snapshot(app) == before


# --- status --------------------------------------------------------------------------------

MOVES = [
    # (class, from, to, allowed)
    ("Sample", "Initial", "InProgress", True),
    ("Sample", "Initial", "Canceled", True),
    ("Sample", "Initial", "Completed", False),
    ("Sample", "InProgress", "Completed", True),
    ("Sample", "InProgress", "Initial", True),
    ("Sample", "InProgress", "Canceled", True),
    ("Sample", "Completed", "InProgress", True),
    ("Sample", "Completed", "Initial", False),
    ("Sample", "Completed", "Canceled", False),
    ("Sample", "Canceled", "Initial", True),
    ("Sample", "Canceled", "InProgress", False),
    ("Sample", "Initial", "Discarded", True),
    ("Sample", "Completed", "Discarded", True),
    ("Sample", "Canceled", "Discarded", True),
    ("Sample", "Discarded", "Initial", False),
    ("Sample", "Discarded", "InProgress", False),
    ("Plate", "InProgress", "Discarded", True),
    ("Plate", "Discarded", "Canceled", False),
    ("Experiment", "Initial", "InProgress", True),
    ("Experiment", "Completed", "Initial", False),
    ("Fermentation", "Canceled", "Initial", True),
    ("Step", "Initial", "Completed", False),
    ("Project", "Initial", "Active", True),
    ("Project", "Active", "Completed", True),
    ("Project", "Initial", "Completed", False),
    ("Request", "Initial", "Rejected", True),
    ("Request", "Rejected", "Initial", True),
    ("Request", "Rejected", "InProgress", False),
    ("Request", "InProgress", "Initial", False),
    ("Request", "Completed", "InProgress", True),
    ("Location", "Active", "Inactive", True),
    ("Location", "Inactive", "Active", True),
    ("Department", "Active", "Inactive", True),
]


@pytest.mark.parametrize(("eclass", "start", "target", "allowed"), MOVES)
def test_status_changes_follow_the_workflow(app: Flask, admin: ApiClient, eclass: str,
                                            start: str, target: str, allowed: bool) -> None:
    (created,) = save(admin, {"eClass": eclass, "status": start})
    item = {"eClass": eclass, "id": created["id"], "status": target, "name": "moved"}
    if allowed:
        (saved,) = save(admin, item, status=200)
        assert (saved["status"], saved["name"], saved["version"]) == (target, "moved", 2)
        return
    before = snapshot(app)
    response = admin.post("/api/entity", json={"entities": [item]})
    body = assert_problem(response, 409, "invalid_transition")
    assert start in body["detail"] and target in body["detail"]
    assert snapshot(app) == before


@pytest.mark.parametrize(("eclass", "status"), [
    ("Sample", "Active"), ("Experiment", "Discarded"), ("Project", "InProgress"),
    ("Location", "Initial"), ("Sample", "initial"), ("Request", "Done"),
])
def test_unknown_statuses_are_400_on_create_and_update(app: Flask, admin: ApiClient,
                                                       eclass: str, status: str) -> None:
    (created,) = save(admin, {"eClass": eclass})
    before = snapshot(app)
    for item in ({"eClass": eclass, "status": status},
                 {"eClass": eclass, "id": created["id"], "status": status}):
        response = admin.post("/api/entity", json={"entities": [item]})
        body = assert_problem(response, 400, "invalid_entity", errors=True)
        assert body["errors"][0]["field"] == "entities.0.status"
    assert snapshot(app) == before


def test_sending_the_current_status_is_no_change(alice: ApiClient, sample: dict) -> None:
    saved = update(alice, status="Initial")
    assert saved["version"] == 1


def test_a_status_change_is_audited_and_raises_status_changed(alice: ApiClient,
                                                              sample: dict) -> None:
    update(alice, status="InProgress", name="Running")
    update(alice, status="Completed")
    detail = fetch(alice, "Sample", "UPD-1")

    assert [audit["version"] for audit in detail["auditEvents"]] == [3, 2, 1]
    latest, first, _ = detail["auditEvents"]
    assert first["action"] == latest["action"] == "update"
    assert first["changes"] == {"name": {"old": "Original", "new": "Running"},
                                "status": {"old": "Initial", "new": "InProgress"}}
    assert latest["changes"] == {"status": {"old": "InProgress", "new": "Completed"}}
    assert first["userID"] == "alice"
    assert [(event["kind"], event["data"]) for event in detail["events"]] == [
        ("StatusChanged", {"from": "InProgress", "to": "Completed"}),
        ("StatusChanged", {"from": "Initial", "to": "InProgress"}),
        ("Created", {})]


def test_typed_values_are_audited_as_json(alice: ApiClient, sample: dict) -> None:
    update(alice, dateTaken="2026-02-03", amount=7)
    changes = fetch(alice, "Sample", "UPD-1")["auditEvents"][0]["changes"]
    assert changes == {"dateTaken": {"old": None, "new": "2026-02-03"},
                       "amount": {"old": 5.0, "new": 7.0}}


# --- what an update cannot do --------------------------------------------------------------

def test_the_class_of_an_entity_cannot_change(app: Flask, alice: ApiClient,
                                              sample: dict) -> None:
    before = snapshot(app)
    response = alice.post("/api/entity", json={"entities": [
        {"eClass": "Experiment", "id": "UPD-1", "name": "x"}]})
    body = assert_problem(response, 400, "invalid_entity", errors=True)
    assert body["errors"][0]["field"] == "entities.0.eClass"
    assert snapshot(app) == before


def test_a_department_and_a_project_keep_their_own_ids(admin: ApiClient, department,
                                                       project) -> None:
    chemistry = department("Chemistry")
    vaccine = project("Vaccine")
    saved = save(admin, {"eClass": "Department", "id": chemistry, "name": "Chem",
                         "departmentID": DEFAULT_DEPARTMENT},
                 {"eClass": "Project", "id": vaccine, "projectID": None,
                  "departmentID": chemistry}, status=200)
    assert (saved[0]["departmentID"], saved[0]["name"]) == (chemistry, "Chem")
    assert (saved[1]["projectID"], saved[1]["departmentID"]) == (vaccine, chemistry)


def test_read_only_fields_are_ignored(admin: ApiClient) -> None:
    (location,) = save(admin, {"eClass": "Location", "name": "Freezer", "hierarchy": "fake",
                               "checkin": [], "available": 3, "stored": []})
    assert location["hierarchy"] != "fake"
    saved = save(admin, {"eClass": "User", "id": "admin", "roles": [], "lastLoginUtc": None,
                         "initials": "AD"}, status=200)[0]
    assert saved["initials"] == "AD"
    assert fetch(admin, "User", "admin")["roles"] == ["ADMIN"]


@pytest.mark.parametrize("extra", [
    {"notes": [{"content": "late"}]}, {"password": "a-new-password"}, {"input": []},
])
def test_create_only_properties_are_rejected_on_update(app: Flask, admin: ApiClient,
                                                       extra: dict) -> None:
    save(admin, {"eClass": "Step", "id": "UPD-STEP"}, {"eClass": "User", "id": "upd-user",
                                                        "password": "long-password"})
    eclass, entity_id = ("User", "upd-user") if "password" in extra else ("Step", "UPD-STEP")
    before = snapshot(app)
    response = admin.post("/api/entity", json={"entities": [
        {"eClass": eclass, "id": entity_id, **extra}]})
    body = assert_problem(response, 400, "invalid_entity", errors=True)
    assert body["errors"][0]["field"] == f"entities.0.{next(iter(extra))}"
    assert snapshot(app) == before
