"""``/api/userRole``: the roles are the scopes (decisions §4); ADMIN lists, assigns and
revokes them, and a change takes effect on the user's next request."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from labapp.access.actor import BUILT_IN_ROLES
from tests.conftest import DEFAULT_DEPARTMENT, ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import body_of
from tests.users.conftest import USER_KEYS, state, stored_user

DEPARTMENT_ACCESS = f"/api/department/{DEFAULT_DEPARTMENT}/access"


def change(api: ApiClient, action: str, name: str, user_id: str, status: int = 200) -> Any:
    return body_of(api.put(f"/api/userRole/{action}", json={"name": name, "userID": user_id}),
                   status)


def test_the_built_in_roles_are_listed_with_descriptions(admin: ApiClient) -> None:
    roles = body_of(admin.get("/api/userRole"), 200)

    assert all(set(role) == {"name", "description"} for role in roles)
    listed = {role["name"]: role["description"] for role in roles}
    assert {"ADMIN", "DATA_MANAGER", "DATA_MANAGER_PROJECT_WRITE"} <= set(listed)
    for name, description in BUILT_IN_ROLES.items():
        assert listed[name] == description and description
    assert [role["name"] for role in roles] == sorted(listed)


def test_assign_gives_the_scope_at_once(admin: ApiClient, alice: ApiClient) -> None:
    assert_problem(alice.get(DEPARTMENT_ACCESS), 403, "missing_scope")

    user = change(admin, "assign", "DATA_MANAGER", "alice")

    assert set(user) == USER_KEYS
    assert (user["id"], user["roles"]) == ("alice", ["DATA_MANAGER"])
    assert alice.get(DEPARTMENT_ACCESS).status_code == 200
    assert body_of(alice.get("/api/user"), 200)["roles"] == ["DATA_MANAGER"]


def test_assign_is_idempotent(app: Flask, admin: ApiClient, alice: ApiClient) -> None:
    change(admin, "assign", "DATA_MANAGER", "alice")
    before = state(app)

    user = change(admin, "assign", "DATA_MANAGER", "alice")

    assert user["roles"] == ["DATA_MANAGER"]
    assert state(app) == before


def test_roles_accumulate_and_revoke_removes_one(admin: ApiClient, alice: ApiClient) -> None:
    change(admin, "assign", "DATA_MANAGER_PROJECT_WRITE", "alice")
    assert change(admin, "assign", "DATA_MANAGER", "alice")["roles"] == [
        "DATA_MANAGER", "DATA_MANAGER_PROJECT_WRITE"]

    user = change(admin, "revoke", "DATA_MANAGER", "alice")

    assert user["roles"] == ["DATA_MANAGER_PROJECT_WRITE"]
    assert_problem(alice.get(DEPARTMENT_ACCESS), 403, "missing_scope")


def test_revoking_a_role_not_held_changes_nothing(app: Flask, admin: ApiClient,
                                                  alice: ApiClient) -> None:
    before = state(app)
    assert change(admin, "revoke", "ADMIN", "alice")["roles"] == []
    assert state(app) == before


def test_an_assigned_admin_is_an_admin(admin: ApiClient, alice: ApiClient, bob: str) -> None:
    change(admin, "assign", "ADMIN", "alice")
    assert body_of(alice.get("/api/userRole"), 200)
    assert body_of(alice.put("/api/user", json={"userID": "bob", "name": "Robert"}),
                   200)["name"] == "Robert"


@pytest.mark.parametrize("action", ["assign", "revoke"])
@pytest.mark.parametrize(("body", "status", "code", "field"), [
    ({"name": "SUPERUSER", "userID": "alice"}, 400, "invalid_input", "name"),
    ({"name": "admin", "userID": "alice"}, 400, "invalid_input", "name"),
    ({"name": "ADMIN ON-PREMISES", "userID": "alice"}, 400, "invalid_input", "name"),
    ({"name": "DATA_MANAGER"}, 400, "validation_failed", "userID"),
    ({"userID": "alice"}, 400, "validation_failed", "name"),
    ({"name": "", "userID": "alice"}, 400, "validation_failed", "name"),
    ({"name": ["ADMIN"], "userID": "alice"}, 400, "validation_failed", "name"),
    ({"name": "DATA_MANAGER", "userID": "alice", "roles": ["ADMIN"]}, 400,
     "validation_failed", "roles"),
    ({"name": "DATA_MANAGER", "userID": "nobody"}, 404, "not_found", None),
    ({"name": "DATA_MANAGER", "userID": DEFAULT_DEPARTMENT}, 404, "not_found", None),
])
def test_bad_role_changes_change_nothing(app: Flask, admin: ApiClient, alice: ApiClient,
                                         action: str, body: dict, status: int, code: str,
                                         field: str | None) -> None:
    before, stored = state(app), stored_user(app, "alice")

    response = admin.put(f"/api/userRole/{action}", json=body)

    problem = assert_problem(response, status, code, errors=field is not None)
    if field is not None:
        assert problem["errors"][0]["field"] == field
    assert state(app) == before and stored_user(app, "alice") == stored


@pytest.mark.parametrize("role", [(), ("DATA_MANAGER",), ("DATA_MANAGER_PROJECT_WRITE",)])
def test_nobody_but_admin_raises_their_own_roles(app: Flask, member: Callable[..., ApiClient],
                                                 role: tuple[str, ...]) -> None:
    api = member("alice", roles=list(role))
    before = state(app)

    assert_problem(api.put("/api/userRole/assign", json={"name": "ADMIN", "userID": "alice"}),
                   403, "missing_scope")
    # roles are read-only in PUT /api/user: sent back, they are ignored (decisions §4).
    assert body_of(api.put("/api/user", json={"roles": ["ADMIN"]}), 200)["roles"] == list(role)
    assert_problem(api.post("/api/entity", json={"entities": [
        {"eClass": "User", "id": "alice", "name": "Alice"}]}), 403, "forbidden")

    assert state(app) == before
    assert body_of(api.get("/api/user"), 200)["roles"] == list(role)
