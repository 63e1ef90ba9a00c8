"""``/api/department/{id}/access``: members and grants, and that a grant really changes what
its grantee may see and change (decisions §5)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from labapp.model.access import DepartmentAccess
from tests.conftest import DEFAULT_DEPARTMENT, ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import Grants, body_of, fetch, save
from tests.grants.conftest import grant_count, grant_rows, state

ENTRY_KEYS = {"isMember", "accessType", "userID", "user", "accessDepartmentID", "department"}
USER_KEYS = {"id", "name", "email", "departmentID", "isActive"}


@pytest.fixture
def chem(department: Callable[..., str], admin: ApiClient) -> str:
    """Department Chemistry, owning sample DA-S."""
    chem = department("Chemistry")
    save(admin, {"eClass": "Sample", "id": "DA-S", "departmentID": chem})
    return chem


@pytest.fixture
def alice(member: Callable[..., ApiClient]) -> ApiClient:
    """A user of DEP00001 without roles."""
    return member("alice")


def access(api: ApiClient, department_id: str, status: int = 200) -> Any:
    return body_of(api.get(f"/api/department/{department_id}/access"), status)


def post_grant(api: ApiClient, department_id: str, status: int, **body: Any) -> Any:
    return body_of(api.post(f"/api/department/{department_id}/access", json=body), status)


def rename(api: ApiClient, entity_id: str, name: str):
    return api.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": entity_id, "name": name}]})


def test_a_new_department_lists_nobody(admin: ApiClient, department: Callable) -> None:
    assert access(admin, department("Empty")) == []


def test_members_are_listed_with_write_and_is_member(admin: ApiClient, chem: str,
                                                     make_user: Callable, alice: ApiClient,
                                                     grant: Grants) -> None:
    make_user("mia", department_id=chem, name="Mia Member")
    make_user("max", department_id=chem)
    grant.department(chem, "Read", user="alice")

    entries = access(admin, chem)

    assert all(set(entry) == ENTRY_KEYS for entry in entries)
    assert [(e["userID"], e["isMember"], e["accessType"]) for e in entries] == [
        ("max", True, "Write"), ("mia", True, "Write"), ("alice", False, "Read")]
    mia = entries[1]
    assert mia["user"] == {"id": "mia", "name": "Mia Member", "email": None,
                           "departmentID": chem, "isActive": True}
    assert mia["accessDepartmentID"] is None and mia["department"] is None
    # The administrator lives in DEP00001, not here; nobody's secrets are listed.
    assert "admin" not in {entry["userID"] for entry in entries}
    assert "password" not in str(entries).lower()


def test_the_home_department_lists_its_members(admin: ApiClient, alice: ApiClient) -> None:
    members = {entry["userID"]: entry for entry in access(admin, DEFAULT_DEPARTMENT)}
    assert {"admin", "alice"} <= set(members)
    assert members["alice"]["isMember"] is True and members["alice"]["accessType"] == "Write"


def test_a_read_grant_lets_a_user_read_but_not_write(app: Flask, admin: ApiClient, chem: str,
                                                     alice: ApiClient) -> None:
    fetch(alice, "Sample", "DA-S", 404)

    entry = post_grant(admin, chem, 201, accessType="Read", userID="alice")

    assert entry == {"isMember": False, "accessType": "Read", "userID": "alice",
                     "user": {"id": "alice", "name": "Alice", "email": None,
                              "departmentID": DEFAULT_DEPARTMENT, "isActive": True},
                     "accessDepartmentID": None, "department": None}
    assert fetch(alice, "Sample", "DA-S")["accessType"] == "Read"
    assert_problem(rename(alice, "DA-S", "changed"), 403, "forbidden")
    assert fetch(admin, "Sample", "DA-S")["name"] == "DA-S"


def test_write_replaces_read_without_a_second_grant(app: Flask, admin: ApiClient, chem: str,
                                                    alice: ApiClient) -> None:
    post_grant(admin, chem, 201, accessType="Read", userID="alice")

    entry = post_grant(admin, chem, 200, accessType="Write", userID="alice")

    assert entry["accessType"] == "Write" and entry["userID"] == "alice"
    assert grant_rows(app)["department"] == [(chem, "alice", None, "Write")]
    assert [(e["userID"], e["accessType"]) for e in access(admin, chem)] == [("alice", "Write")]
    assert body_of(rename(alice, "DA-S", "by alice"), 200)["entities"][0]["name"] == "by alice"
    # And back down again: the same row, now Read.
    post_grant(admin, chem, 200, accessType="Read", userID="alice")
    assert grant_rows(app)["department"] == [(chem, "alice", None, "Read")]
    assert_problem(rename(alice, "DA-S", "again"), 403, "forbidden")


def test_revoking_a_user_hides_the_department_again(app: Flask, admin: ApiClient, chem: str,
                                                    alice: ApiClient, grant: Grants) -> None:
    grant.department(chem, "Write", user="alice")
    assert fetch(alice, "Sample", "DA-S")["accessType"] == "Write"

    response = admin.delete(f"/api/department/{chem}/access/user/alice")

    assert response.status_code == 204 and response.get_data() == b""
    assert grant_count(app, DepartmentAccess) == 0
    assert_problem(alice.get("/api/entity/Sample/DA-S"), 404, "not_found")
    # A second revoke has nothing to remove.
    assert_problem(admin.delete(f"/api/department/{chem}/access/user/alice"), 404, "not_found")


def test_a_grant_to_a_department_reaches_its_members(app: Flask, admin: ApiClient, chem: str,
                                                     department: Callable,
                                                     member: Callable[..., ApiClient],
                                                     alice: ApiClient) -> None:
    bio = department("Biology")
    bob = member("bob", department_id=bio)
    fetch(bob, "Sample", "DA-S", 404)

    entry = post_grant(admin, chem, 201, accessType="Write", accessDepartmentID=bio)

    assert entry == {"isMember": False, "accessType": "Write", "userID": None, "user": None,
                     "accessDepartmentID": bio, "department": {"id": bio, "name": "Biology"}}
    assert access(admin, chem)[-1] == entry
    assert body_of(rename(bob, "DA-S", "by bob"), 200)["entities"][0]["name"] == "by bob"
    fetch(alice, "Sample", "DA-S", 404)  # not a member of Biology

    response = admin.delete(f"/api/department/{chem}/access/department/{bio}")
    assert response.status_code == 204
    fetch(bob, "Sample", "DA-S", 404)
    assert grant_count(app, DepartmentAccess) == 0


def test_revoking_a_user_leaves_the_department_grant(app: Flask, admin: ApiClient, chem: str,
                                                     grant: Grants, alice: ApiClient) -> None:
    grant.department(chem, "Read", user="alice")
    grant.department(chem, "Read", to_department=DEFAULT_DEPARTMENT)

    assert admin.delete(f"/api/department/{chem}/access/user/alice").status_code == 204

    assert grant_rows(app)["department"] == [(chem, None, DEFAULT_DEPARTMENT, "Read")]
    assert fetch(alice, "Sample", "DA-S")["accessType"] == "Read"  # still, through DEP00001
    assert_problem(admin.delete(f"/api/department/{chem}/access/department/alice"), 404,
                   "not_found")


def test_a_member_is_not_a_grant_and_cannot_be_revoked(app: Flask, admin: ApiClient, chem: str,
                                                       make_user: Callable) -> None:
    make_user("mia", department_id=chem)
    before = state(app)
    assert_problem(admin.delete(f"/api/department/{chem}/access/user/mia"), 404, "not_found")
    assert state(app) == before
    assert access(admin, chem)[0]["userID"] == "mia"


@pytest.mark.parametrize(("body", "status", "code", "field"), [
    ({"accessType": "Read", "userID": "nobody"}, 400, "invalid_input", "userID"),
    ({"accessType": "Read", "userID": DEFAULT_DEPARTMENT}, 400, "invalid_input", "userID"),
    ({"accessType": "Read", "accessDepartmentID": "DEP99999"}, 400, "invalid_input",
     "accessDepartmentID"),
    ({"accessType": "Read", "accessDepartmentID": "alice"}, 400, "invalid_input",
     "accessDepartmentID"),
    ({"accessType": "Read", "userID": "alice", "accessDepartmentID": DEFAULT_DEPARTMENT}, 400,
     "invalid_input", "userID"),
    ({"accessType": "Read"}, 400, "invalid_input", "userID"),
    ({"accessType": "Read", "userID": None, "accessDepartmentID": None}, 400, "invalid_input",
     "userID"),
    ({"accessType": "Admin", "userID": "alice"}, 400, "validation_failed", "accessType"),
    ({"accessType": "None", "userID": "alice"}, 400, "validation_failed", "accessType"),
    ({"accessType": None, "userID": "alice"}, 400, "validation_failed", "accessType"),
    ({"userID": "alice"}, 400, "validation_failed", "accessType"),
    ({"accessType": "Read", "userID": ""}, 400, "validation_failed", "userID"),
    ({"accessType": "Read", "userID": ["alice"]}, 400, "validation_failed", "userID"),
    ({"accessType": "Read", "departmentID": DEFAULT_DEPARTMENT}, 400, "validation_failed",
     "departmentID"),
])
def test_bad_grants_are_rejected_and_change_nothing(app: Flask, admin: ApiClient, chem: str,
                                                    alice: ApiClient, grant: Grants,
                                                    body: dict, status: int, code: str,
                                                    field: str) -> None:
    grant.department(chem, "Read", user="alice")
    before = state(app)

    response = admin.post(f"/api/department/{chem}/access", json=body)

    problem = assert_problem(response, status, code, errors=True)
    assert field in {error["field"] for error in problem["errors"]}
    assert state(app) == before


@pytest.mark.parametrize(("data", "content_type", "status"), [
    ("accessType=Read&userID=alice", "application/x-www-form-urlencoded", 415),
    ("{not json", "application/json", 400),
    ('["Read", "alice"]', "application/json", 400),
])
def test_a_body_that_is_not_a_json_object_is_rejected(app: Flask, admin: ApiClient, chem: str,
                                                      alice: ApiClient, data: str,
                                                      content_type: str, status: int) -> None:
    before = state(app)
    response = admin.post(f"/api/department/{chem}/access", data=data,
                          headers={"Content-Type": content_type})
    assert response.status_code == status
    assert response.mimetype == "application/problem+json"
    assert state(app) == before


@pytest.mark.parametrize("missing", ["DEP99999", "alice", "PRJ-ID", "DA-S"])
@pytest.mark.parametrize(("method", "suffix", "body"), [
    ("GET", "/access", None),
    ("POST", "/access", {"accessType": "Read", "userID": "alice"}),
    ("DELETE", "/access/user/alice", None),
    ("DELETE", f"/access/department/{DEFAULT_DEPARTMENT}", None),
    ("DELETE", "", None),
    ("DELETE", "?force=true", None),
], ids=["list", "grant", "revoke-user", "revoke-department", "delete", "force-delete"])
def test_every_route_is_404_for_what_is_not_a_department(app: Flask, admin: ApiClient,
                                                         chem: str, alice: ApiClient,
                                                         project: Callable, method: str,
                                                         suffix: str, body: dict | None,
                                                         missing: str) -> None:
    """Unknown ids and ids of other classes (a user, a project, a sample) alike."""
    ids = {"PRJ-ID": project("Not a department")}
    target = ids.get(missing, missing)
    before = state(app)
    response = admin.open(method, f"/api/department/{target}{suffix}",
                          **({} if body is None else {"json": body}))
    assert_problem(response, 404, "not_found")
    assert state(app) == before


def test_a_data_manager_manages_department_access(app: Flask, chem: str, alice: ApiClient,
                                                  member: Callable[..., ApiClient]) -> None:
    manager = member("dm", roles=["DATA_MANAGER"])

    post_grant(manager, chem, 201, accessType="Read", userID="alice")
    assert fetch(alice, "Sample", "DA-S")["accessType"] == "Read"
    assert [entry["userID"] for entry in access(manager, chem)] == ["alice"]
    assert manager.delete(f"/api/department/{chem}/access/user/alice").status_code == 204
    fetch(alice, "Sample", "DA-S", 404)
