"""Creating users: ``POST /api/entity`` with ``eClass: "User"`` and a create-only password,
by ADMIN only (decisions §4). The entity tests cover the field checks; these cover who may
create and what the new user can do."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from tests.conftest import ApiClient, basic_header
from tests.contracts.problem import assert_problem
from tests.entities.conftest import body_of, save
from tests.users.conftest import USER_KEYS, state

CAROL = {"eClass": "User", "id": "carol", "name": "Carol King", "email": "carol@example.org",
         "initials": "CK", "password": "carol-password-1"}


def test_admin_creates_a_user_who_sees_themselves(app: Flask, admin: ApiClient,
                                                  department: Callable) -> None:
    chem = department("Chemistry")

    (created,) = save(admin, {**CAROL, "departmentID": chem})

    assert "password" not in created and "passwordHash" not in created
    me = body_of(app.test_client().get("/api/user", headers=basic_header(
        "carol", "carol-password-1")), 200)
    assert set(me) == USER_KEYS
    assert (me["id"], me["name"], me["email"], me["initials"], me["departmentID"]) == (
        "carol", "Carol King", "carol@example.org", "CK", chem)
    assert me["isActive"] is True and me["roles"] == [] and me["settings"] == {}
    members = body_of(admin.get(f"/api/department/{chem}/access"), 200)
    assert [(e["userID"], e["isMember"]) for e in members] == [("carol", True)]


def test_roles_cannot_be_given_at_creation(app: Flask, admin: ApiClient) -> None:
    """``roles`` is read-only: it is ignored, and only ``/api/userRole/assign`` grants one."""
    (created,) = save(admin, {**CAROL, "roles": ["ADMIN"]})
    assert created["roles"] == []
    response = app.test_client().get("/api/userRole", headers=basic_header(
        "carol", "carol-password-1"))
    assert_problem(response, 403, "missing_scope")


@pytest.mark.parametrize("role", [(), ("DATA_MANAGER",), ("DATA_MANAGER_PROJECT_WRITE",)])
def test_only_admin_creates_users(app: Flask, member: Callable[..., ApiClient],
                                  role: tuple[str, ...]) -> None:
    api = member("alice", roles=list(role))
    before = state(app)
    assert_problem(api.post("/api/entity", json={"entities": [CAROL]}), 403, "forbidden")
    assert state(app) == before


@pytest.mark.parametrize(("item", "code", "field"), [
    # An existing id makes the item an update, where the password is refused.
    ({"id": "alice"}, "invalid_entity", "entities.0.password"),
    ({"id": "admin"}, "invalid_entity", "entities.0.password"),
    ({"departmentID": "DEP99999"}, "invalid_entity", "entities.0.departmentID"),
])
def test_an_existing_user_or_unknown_department_changes_nothing(
        app: Flask, admin: ApiClient, alice: ApiClient, item: dict[str, Any], code: str,
        field: str) -> None:
    before = state(app)
    response = admin.post("/api/entity", json={"entities": [{**CAROL, **item}]})
    problem = assert_problem(response, 400, code, errors=True)
    assert problem["errors"][0]["field"] == field
    assert state(app) == before
    # alice's password was not replaced by the rejected item's.
    assert app.test_client().get("/api/user", headers=basic_header(
        "alice", CAROL["password"])).status_code == 401
