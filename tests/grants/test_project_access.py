"""``/api/project/{id}/rls``: grants on a project to a user or a department, and that they
really change what the grantee may see and change (decisions §5)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from labapp.model.access import ProjectAccess
from tests.conftest import DEFAULT_DEPARTMENT, ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import Grants, body_of, fetch, save
from tests.grants.conftest import grant_count, grant_rows, state

ENTRY_KEYS = {"accessType", "userID", "user", "departmentID", "department"}


@pytest.fixture
def proj(admin: ApiClient, department: Callable[..., str], project: Callable[..., str]) -> str:
    """Project Vaccine of department Away, with sample PA-S in both; nobody else sees it."""
    away = department("Away")
    proj = project("Vaccine", departmentID=away)
    save(admin, {"eClass": "Sample", "id": "PA-S", "departmentID": away, "projectID": proj})
    return proj


@pytest.fixture
def alice(member: Callable[..., ApiClient]) -> ApiClient:
    return member("alice")


def rls(api: ApiClient, project_id: str, status: int = 200) -> Any:
    return body_of(api.get(f"/api/project/{project_id}/rls"), status)


def post_grant(api: ApiClient, project_id: str, status: int, **body: Any) -> Any:
    return body_of(api.post(f"/api/project/{project_id}/rls", json=body), status)


def rename(api: ApiClient, name: str):
    return api.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": "PA-S", "name": name}]})


def test_a_new_project_has_no_grants(admin: ApiClient, proj: str) -> None:
    assert rls(admin, proj) == []


def test_read_then_write_then_revoke(app: Flask, admin: ApiClient, proj: str,
                                     alice: ApiClient) -> None:
    """The issue's walk-through: Read shows the sample but refuses the update, Write allows
    it, and after the revoke the sample is hidden again."""
    fetch(alice, "Sample", "PA-S", 404)

    entry = post_grant(admin, proj, 201, accessType="Read", userID="alice")
    assert entry == {"accessType": "Read", "userID": "alice",
                     "user": {"id": "alice", "name": "Alice", "email": None,
                              "departmentID": DEFAULT_DEPARTMENT, "isActive": True},
                     "departmentID": None, "department": None}
    assert fetch(alice, "Sample", "PA-S")["accessType"] == "Read"
    assert_problem(rename(alice, "by alice"), 403, "forbidden")

    entry = post_grant(admin, proj, 200, accessType="Write", userID="alice")
    assert entry["accessType"] == "Write"
    assert grant_rows(app)["project"] == [(proj, "alice", None, "Write")]
    assert body_of(rename(alice, "by alice"), 200)["entities"][0]["name"] == "by alice"

    response = admin.delete(f"/api/project/{proj}/rls/alice")
    assert response.status_code == 204 and response.get_data() == b""
    assert_problem(alice.get("/api/entity/Sample/PA-S"), 404, "not_found")
    assert rls(admin, proj) == []


def test_a_grant_to_a_department_reaches_its_members(app: Flask, admin: ApiClient, proj: str,
                                                     department: Callable,
                                                     member: Callable[..., ApiClient],
                                                     alice: ApiClient) -> None:
    bio = department("Biology")
    bob = member("bob", department_id=bio)

    entry = post_grant(admin, proj, 201, accessType="Read", departmentID=bio)

    assert entry == {"accessType": "Read", "userID": None, "user": None, "departmentID": bio,
                     "department": {"id": bio, "name": "Biology"}}
    assert fetch(bob, "Sample", "PA-S")["accessType"] == "Read"
    fetch(alice, "Sample", "PA-S", 404)
    # The project entity itself is covered by its own grant too.
    assert fetch(bob, "Project", proj)["accessType"] == "Read"

    assert admin.delete(f"/api/project/{proj}/rls/{bio}").status_code == 204
    fetch(bob, "Sample", "PA-S", 404)
    assert grant_count(app, ProjectAccess) == 0


def test_the_list_shows_every_grant(admin: ApiClient, proj: str, alice: ApiClient,
                                    grant: Grants) -> None:
    grant.project(proj, "Write", user="alice")
    grant.project(proj, "Read", to_department=DEFAULT_DEPARTMENT)

    entries = rls(admin, proj)

    assert all(set(entry) == ENTRY_KEYS for entry in entries)
    assert [(e["userID"], e["departmentID"], e["accessType"]) for e in entries] == [
        ("alice", None, "Write"), (None, DEFAULT_DEPARTMENT, "Read")]
    assert "password" not in str(entries).lower()


def test_upsert_keeps_one_grant_per_grantee(app: Flask, admin: ApiClient, proj: str,
                                            alice: ApiClient) -> None:
    post_grant(admin, proj, 201, accessType="Write", departmentID=DEFAULT_DEPARTMENT)
    post_grant(admin, proj, 201, accessType="Read", userID="alice")
    post_grant(admin, proj, 200, accessType="Read", departmentID=DEFAULT_DEPARTMENT)
    post_grant(admin, proj, 200, accessType="Read", departmentID=DEFAULT_DEPARTMENT)

    assert grant_rows(app)["project"] == sorted(
        [(proj, None, DEFAULT_DEPARTMENT, "Read"), (proj, "alice", None, "Read")], key=repr)


def test_revoking_one_grantee_leaves_the_others(app: Flask, admin: ApiClient, proj: str,
                                                alice: ApiClient, grant: Grants) -> None:
    grant.project(proj, "Read", user="alice")
    grant.project(proj, "Write", to_department=DEFAULT_DEPARTMENT)

    assert admin.delete(f"/api/project/{proj}/rls/{DEFAULT_DEPARTMENT}").status_code == 204

    assert grant_rows(app)["project"] == [(proj, "alice", None, "Read")]
    assert fetch(alice, "Sample", "PA-S")["accessType"] == "Read"


@pytest.mark.parametrize("grantee", ["nobody", "admin"])
def test_revoking_a_grant_that_does_not_exist_is_404(app: Flask, admin: ApiClient, proj: str,
                                                     alice: ApiClient, grant: Grants,
                                                     grantee: str) -> None:
    grant.project(proj, "Read", user="alice")
    before = state(app)
    assert_problem(admin.delete(f"/api/project/{proj}/rls/{grantee}"), 404, "not_found")
    assert state(app) == before


@pytest.mark.parametrize(("body", "code", "field"), [
    ({"accessType": "Read", "userID": "nobody"}, "invalid_input", "userID"),
    ({"accessType": "Read", "userID": DEFAULT_DEPARTMENT}, "invalid_input", "userID"),
    ({"accessType": "Read", "departmentID": "DEP99999"}, "invalid_input", "departmentID"),
    ({"accessType": "Read", "departmentID": "alice"}, "invalid_input", "departmentID"),
    ({"accessType": "Read", "userID": "alice", "departmentID": DEFAULT_DEPARTMENT},
     "invalid_input", "userID"),
    ({"accessType": "Read"}, "invalid_input", "userID"),
    ({"accessType": "Read", "userID": None, "departmentID": None}, "invalid_input", "userID"),
    ({"accessType": "Owner", "userID": "alice"}, "validation_failed", "accessType"),
    ({"accessType": "write", "userID": "alice"}, "validation_failed", "accessType"),
    ({"userID": "alice"}, "validation_failed", "accessType"),
    ({"accessType": "Read", "userID": 7}, "validation_failed", "userID"),
    ({"accessType": "Read", "accessDepartmentID": DEFAULT_DEPARTMENT}, "validation_failed",
     "accessDepartmentID"),
])
def test_bad_grants_are_rejected_and_change_nothing(app: Flask, admin: ApiClient, proj: str,
                                                    alice: ApiClient, grant: Grants,
                                                    body: dict, code: str,
                                                    field: str) -> None:
    grant.project(proj, "Read", user="alice")
    before = state(app)

    response = admin.post(f"/api/project/{proj}/rls", json=body)

    problem = assert_problem(response, 400, code, errors=True)
    assert field in {error["field"] for error in problem["errors"]}
    assert state(app) == before


@pytest.mark.parametrize("missing", ["PRJ99999", "alice", DEFAULT_DEPARTMENT, "PA-S"])
@pytest.mark.parametrize(("method", "suffix", "body"), [
    ("GET", "/rls", None),
    ("POST", "/rls", {"accessType": "Read", "userID": "alice"}),
    ("DELETE", "/rls/alice", None),
    ("DELETE", "", None),
    ("DELETE", "?force=true", None),
], ids=["list", "grant", "revoke", "delete", "force-delete"])
def test_every_route_is_404_for_what_is_not_a_project(app: Flask, admin: ApiClient, proj: str,
                                                      alice: ApiClient, method: str,
                                                      suffix: str, body: dict | None,
                                                      missing: str) -> None:
    """Unknown ids and ids of other classes (a user, a department, a sample) alike."""
    before = state(app)
    response = admin.open(method, f"/api/project/{missing}{suffix}",
                          **({} if body is None else {"json": body}))
    assert_problem(response, 404, "not_found")
    assert state(app) == before


def test_a_project_write_manager_grants_and_revokes(proj: str, alice: ApiClient,
                                                    member: Callable[..., ApiClient]) -> None:
    manager = member("pw", roles=["DATA_MANAGER_PROJECT_WRITE"])

    post_grant(manager, proj, 201, accessType="Write", userID="alice")
    assert body_of(rename(alice, "granted by pw"), 200)["entities"][0]["name"] == "granted by pw"
    assert manager.delete(f"/api/project/{proj}/rls/alice").status_code == 204
    fetch(alice, "Sample", "PA-S", 404)
    # The spec gives the list to ADMIN or DATA_MANAGER only.
    assert_problem(manager.get(f"/api/project/{proj}/rls"), 403, "missing_scope")
