"""``POST /api/entity`` creating entities: defaults, per-class rules, inheritance, audit."""
from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.auth.checks import secret_keys
from tests.conftest import DEFAULT_DEPARTMENT, ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import fetch, next_value, save, snapshot

UTC_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
def alice(member: Callable[..., ApiClient]) -> ApiClient:
    return member("alice")


def test_a_bare_item_gets_every_default(alice: ApiClient) -> None:
    (created,) = save(alice, {"eClass": "Sample"})

    assert re.fullmatch(r"SAM\d{5}", created["id"])
    assert created["eClass"] == "Sample"
    assert created["name"] == created["id"]
    assert created["userID"] == "alice"
    assert created["departmentID"] == DEFAULT_DEPARTMENT
    assert created["projectID"] is None
    assert created["status"] == "Initial"
    assert created["type"] == "Other"
    assert created["attributes"] == {}
    assert created["barcode"] is None and created["description"] is None
    assert created["version"] == 1
    assert created["createdBy"] == created["modifiedBy"] == "alice"
    assert UTC_STAMP.match(created["createdUtc"])
    assert created["createdUtc"] == created["modifiedUtc"]


def test_the_answer_is_what_is_stored(alice: ApiClient) -> None:
    (created,) = save(alice, {"eClass": "Sample", "name": "Blood 1", "description": "fresh",
                              "barcode": "BC-create-1", "type": "Blood", "amount": 2,
                              "unit": "ml", "dateTaken": "2026-03-01",
                              "attributes": {"ph": 7.2, "tags": ["a", "b"]}})

    assert created["amount"] == 2.0 and isinstance(created["amount"], float)
    assert created["dateTaken"] == "2026-03-01"
    stored = fetch(alice, "Sample", created["id"])
    assert {key: stored[key] for key in created} == created
    assert stored["attributes"] == {"ph": 7.2, "tags": ["a", "b"]}
    assert stored["barcode"] == "BC-create-1" and stored["type"] == "Blood"


def test_any_listed_status_is_accepted_on_create(alice: ApiClient) -> None:
    # Imports carry history: a Completed sample may be created as such.
    (created,) = save(alice, {"eClass": "Sample", "status": "Discarded"})
    assert created["status"] == "Discarded"


@pytest.mark.parametrize(("eclass", "defaults"), [
    ("Experiment", {"status": "Initial"}),
    ("Step", {"status": "Initial"}),
    ("Plate", {"status": "Initial", "rows": 8, "columns": 12}),
    ("Request", {"status": "Initial", "priority": "Normal"}),
    ("Location", {"status": "Active", "locationType": "Other", "capacity": None}),
    ("Fermentation", {"status": "Initial"}),
    ("Note", {"status": "Initial"}),
])
def test_class_defaults(alice: ApiClient, eclass: str, defaults: dict) -> None:
    (created,) = save(alice, {"eClass": eclass})
    assert created["eClass"] == eclass
    assert {key: created[key] for key in defaults} == defaults
    assert created["id"].startswith({"Experiment": "EXP", "Step": "STP", "Plate": "PLT",
                                     "Request": "REQ", "Location": "LOC",
                                     "Fermentation": "FER", "Note": "NTE"}[eclass])


def test_class_names_in_the_body_are_case_insensitive(alice: ApiClient) -> None:
    (created,) = save(alice, {"eClass": "sAMPLE"})
    assert created["eClass"] == "Sample"
    assert fetch(alice, "Sample", created["id"])["eClass"] == "Sample"


def test_generated_ids_follow_the_class_sequence(app: Flask, alice: ApiClient) -> None:
    before = next_value(app, "Sample")
    created = save(alice, *({"eClass": "Sample"} for _ in range(3)))
    assert [item["id"] for item in created] == [f"SAM{before + n:05d}" for n in range(3)]
    assert next_value(app, "Sample") == before + 3


def test_an_explicit_id_is_kept(alice: ApiClient) -> None:
    (created,) = save(alice, {"eClass": "Sample", "id": "my-own-id"})
    assert created["id"] == "my-own-id" and created["name"] == "my-own-id"


def test_items_come_back_in_request_order(alice: ApiClient) -> None:
    created = save(alice, {"eClass": "Location", "name": "L"}, {"eClass": "Sample", "name": "S"},
                   {"eClass": "Experiment", "name": "E"})
    assert [(item["eClass"], item["name"]) for item in created] == [
        ("Location", "L"), ("Sample", "S"), ("Experiment", "E")]


def test_creation_is_audited_and_raises_created(alice: ApiClient) -> None:
    (created,) = save(alice, {"eClass": "Sample", "name": "audited", "amount": 1.5,
                              "attributes": {"k": "v"}})
    detail = fetch(alice, "Sample", created["id"])

    (audit,) = detail["auditEvents"]
    assert audit["action"] == "create" and audit["version"] == 1
    assert audit["userID"] == "alice" and UTC_STAMP.match(audit["timestampUtc"])
    assert audit["changes"] == {
        "id": {"old": None, "new": created["id"]}, "name": {"old": None, "new": "audited"},
        "status": {"old": None, "new": "Initial"}, "type": {"old": None, "new": "Other"},
        "userID": {"old": None, "new": "alice"},
        "departmentID": {"old": None, "new": DEFAULT_DEPARTMENT},
        "amount": {"old": None, "new": 1.5}, "attributes": {"old": None, "new": {"k": "v"}}}
    (event,) = detail["events"]
    assert event["kind"] == "Created" and event["userID"] == "alice"
    assert event["data"] == {}


def test_the_owner_may_be_another_user(alice: ApiClient, make_user) -> None:
    make_user("bob")
    (created,) = save(alice, {"eClass": "Sample", "userID": "bob"})
    assert created["userID"] == "bob" and created["createdBy"] == "alice"


# --- Department, Project, User -------------------------------------------------------------

def test_a_department_carries_its_own_id(admin: ApiClient) -> None:
    (created,) = save(admin, {"eClass": "Department", "name": "Chemistry"})
    assert re.fullmatch(r"DEP\d{5}", created["id"])
    assert created["departmentID"] == created["id"]
    assert created["status"] == "Active"


def test_a_department_ignores_a_given_department(admin: ApiClient) -> None:
    (created,) = save(admin, {"eClass": "Department", "departmentID": DEFAULT_DEPARTMENT,
                              "parentID": DEFAULT_DEPARTMENT})
    assert created["departmentID"] == created["id"]
    assert created["parentID"] == DEFAULT_DEPARTMENT


def test_a_project_carries_its_own_id(admin: ApiClient, department) -> None:
    chemistry = department("Chemistry")
    (created,) = save(admin, {"eClass": "Project", "name": "Vaccine", "departmentID": chemistry,
                              "startDate": "2026-01-01"})
    assert re.fullmatch(r"PRJ\d{5}", created["id"])
    assert created["projectID"] == created["id"]
    assert created["departmentID"] == chemistry
    assert created["startDate"] == "2026-01-01"


def test_a_project_defaults_to_the_creators_department(admin: ApiClient) -> None:
    (created,) = save(admin, {"eClass": "Project"})
    assert created["departmentID"] == DEFAULT_DEPARTMENT


def test_admin_creates_a_user_who_can_log_in(admin: ApiClient, department,
                                             client: FlaskClient) -> None:
    chemistry = department("Chemistry")
    (created,) = save(admin, {"eClass": "User", "id": "carol", "name": "Carol King",
                              "email": "carol@example.org", "initials": "CK",
                              "departmentID": chemistry, "password": "carol-password-1"})

    assert created["id"] == "carol" and created["name"] == "Carol King"
    assert created["departmentID"] == chemistry
    assert created["isActive"] is True and created["roles"] == []
    assert created["status"] == "Active"
    assert not secret_keys(created)
    detail = fetch(admin, "User", "carol")
    assert not secret_keys(detail)
    assert all("carol-password-1" not in str(audit) for audit in detail["auditEvents"])

    login = client.post("/api/auth/login",
                        json={"username": "carol", "password": "carol-password-1"})
    assert login.status_code == 200, login.get_json()
    token = login.get_json()["accessToken"]
    # Her home department is hers to write.
    response = client.post("/api/entity", json={"entities": [{"eClass": "Sample"}]},
                           headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 201
    assert response.get_json()["entities"][0]["departmentID"] == chemistry


def test_an_inactive_user_can_be_created_and_cannot_log_in(admin: ApiClient,
                                                           client: FlaskClient) -> None:
    (created,) = save(admin, {"eClass": "User", "id": "dormant", "isActive": False,
                              "password": "dormant-password"})
    assert created["isActive"] is False
    login = client.post("/api/auth/login",
                        json={"username": "dormant", "password": "dormant-password"})
    assert login.status_code == 401


@pytest.mark.parametrize(("item", "field"), [
    ({"id": "dave"}, "entities.0.password"),
    ({"id": "dave", "password": "short"}, "entities.0.password"),
    ({"id": "dave", "password": 1234567890}, "entities.0.password"),
    ({"password": "long-enough-password"}, "entities.0.id"),
    ({"id": "dave smith", "password": "long-enough-password"}, "entities.0.id"),
    ({"id": "dave:x", "password": "long-enough-password"}, "entities.0.id"),
    ({"id": "-dave", "password": "long-enough-password"}, "entities.0.id"),
    ({"id": "dave\n", "password": "long-enough-password"}, "entities.0.id"),
    ({"id": "#dave", "password": "long-enough-password"}, "entities.0.id"),
])
def test_bad_users_are_rejected(app: Flask, admin: ApiClient, item: dict, field: str) -> None:
    before = snapshot(app)
    response = admin.post("/api/entity", json={"entities": [{"eClass": "User", **item}]})
    body = assert_problem(response, 400, response.get_json()["code"], errors=True)
    assert body["code"] in {"invalid_entity", "invalid_notation"}
    assert body["errors"][0]["field"] == field
    assert snapshot(app) == before


# --- inheritance ---------------------------------------------------------------------------

@pytest.fixture
def layout(admin: ApiClient, department, project) -> dict[str, str]:
    """Three departments and a project, with an experiment and a step in different places."""
    names = {"d1": department("One"), "d2": department("Two"), "d3": department("Three")}
    names["p"] = project("Shared", departmentID=names["d1"])
    save(admin,
         {"eClass": "Experiment", "id": "INH-E", "departmentID": names["d1"],
          "projectID": names["p"]},
         {"eClass": "Step", "id": "INH-S", "experimentID": "INH-E",
          "departmentID": names["d2"], "projectID": None},
         {"eClass": "Sample", "id": "INH-P", "departmentID": names["d3"]})
    return names


def test_a_step_inherits_from_its_experiment(admin: ApiClient, layout: dict) -> None:
    (step,) = save(admin, {"eClass": "Step", "experimentID": "INH-E"})
    assert (step["departmentID"], step["projectID"]) == (layout["d1"], layout["p"])


def test_given_values_win_over_inheritance(admin: ApiClient, layout: dict) -> None:
    (step,) = save(admin, {"eClass": "Step", "experimentID": "INH-E",
                           "departmentID": layout["d3"]})
    assert (step["departmentID"], step["projectID"]) == (layout["d3"], layout["p"])
    (other,) = save(admin, {"eClass": "Step", "experimentID": "INH-E", "projectID": None})
    assert (other["departmentID"], other["projectID"]) == (layout["d1"], None)


@pytest.mark.parametrize(("links", "source"), [
    ({"parentID": "INH-P", "stepID": "INH-S", "experimentID": "INH-E"}, "d3"),
    ({"stepID": "INH-S", "experimentID": "INH-E"}, "d2"),
    ({"experimentID": "INH-E"}, "d1"),
])
def test_a_sample_inherits_along_the_first_parent_link(admin: ApiClient, layout: dict,
                                                       links: dict, source: str) -> None:
    (sample,) = save(admin, {"eClass": "Sample", **links})
    assert sample["departmentID"] == layout[source]
    assert sample["projectID"] == (layout["p"] if source == "d1" else None)


def test_a_child_inherits_from_a_parent_created_later_in_the_batch(admin: ApiClient,
                                                                   layout: dict) -> None:
    child, parent = save(admin, {"eClass": "Sample", "parentID": "#parent"},
                         {"eClass": "Sample", "id": "#parent", "departmentID": layout["d2"],
                          "projectID": layout["p"]})
    assert child["parentID"] == parent["id"]
    assert (child["departmentID"], child["projectID"]) == (layout["d2"], layout["p"])


def test_without_a_parent_the_callers_department_applies(member, department) -> None:
    chemistry = department("Chemistry")
    carol = member("carol", department_id=chemistry)
    (created,) = save(carol, {"eClass": "Experiment"})
    assert created["departmentID"] == chemistry


def test_a_location_inherits_from_its_parent_location(admin: ApiClient, layout: dict) -> None:
    freezer, box = save(admin, {"eClass": "Location", "id": "#f", "departmentID": layout["d2"]},
                        {"eClass": "Location", "parentID": "#f"})
    assert box["departmentID"] == layout["d2"] and box["parentID"] == freezer["id"]
