"""``GET /api/user`` and ``PUT /api/user`` for the caller themselves (decisions §4): anyone
may change their own name, email, initials and settings, and nothing else."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from tests.conftest import (
    AUTH_METHODS,
    DEFAULT_DEPARTMENT,
    PASSWORD,
    ApiClient,
    basic_header,
)
from tests.contracts.problem import assert_problem
from tests.entities.conftest import body_of, fetch
from tests.users.conftest import USER_KEYS, state, stored_user

NEW_PASSWORD = "a-brand-new-password"


def put(api: ApiClient, status: int = 200, **body: Any) -> Any:
    return body_of(api.put("/api/user", json=body), status)


@pytest.mark.parametrize("method", AUTH_METHODS)
def test_get_user_is_the_caller_without_secrets(api_as: Callable[..., ApiClient],
                                                make_user: Callable, method: str) -> None:
    make_user("alice", roles=["DATA_MANAGER"], name="Alice Adams")

    me = body_of(api_as("alice", method).get("/api/user"), 200)

    assert set(me) == USER_KEYS
    assert me["id"] == "alice" and me["name"] == "Alice Adams"
    assert me["departmentID"] == DEFAULT_DEPARTMENT and me["isActive"] is True
    assert me["roles"] == ["DATA_MANAGER"] and me["settings"] == {}
    text = str(me).lower()
    assert "argon2" not in text and "hash" not in text and PASSWORD not in text


def test_get_user_of_the_administrator(admin: ApiClient) -> None:
    me = body_of(admin.get("/api/user"), 200)
    assert (me["id"], me["roles"]) == ("admin", ["ADMIN"])
    assert me["lastLoginUtc"].endswith("Z")  # the admin fixture logs in


@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_anonymous_callers_are_401(app: Flask, method: str) -> None:
    response = app.test_client().open("/api/user", method=method, json={"name": "X"}
                                      if method == "PUT" else None)
    assert_problem(response, 401, "not_authenticated")


@pytest.mark.parametrize("target", [{}, {"userID": "alice"}, {"id": "alice"}])
def test_a_user_updates_their_own_profile(app: Flask, alice: ApiClient,
                                          target: dict[str, str]) -> None:
    before = stored_user(app, "alice")

    updated = put(alice, **target, name="Alice Adams", email="alice@example.org",
                  initials="AA", settings={"theme": "dark", "pageSize": 50})

    assert set(updated) == USER_KEYS
    assert (updated["id"], updated["name"], updated["email"], updated["initials"]) == (
        "alice", "Alice Adams", "alice@example.org", "AA")
    assert updated["settings"] == {"theme": "dark", "pageSize": 50}
    assert body_of(alice.get("/api/user"), 200) == updated
    after = stored_user(app, "alice")
    assert after["version"] == before["version"] + 1
    assert (after["departmentID"], after["isActive"], after["roles"], after["passwordHash"]) == (
        before["departmentID"], before["isActive"], before["roles"], before["passwordHash"])


def test_profile_changes_are_in_the_audit_trail(alice: ApiClient, admin: ApiClient) -> None:
    put(alice, name="Alice Adams", email="alice@example.org", settings={"theme": "dark"})

    detail = fetch(admin, "User", "alice")
    latest = detail["auditEvents"][0]
    assert (latest["action"], latest["userID"], latest["version"]) == (
        "update", "alice", detail["version"])
    assert latest["changes"] == {"name": {"old": "Alice", "new": "Alice Adams"},
                                 "email": {"old": None, "new": "alice@example.org"}}
    assert detail["name"] == "Alice Adams" and detail["modifiedBy"] == "alice"


def test_an_update_that_changes_nothing_leaves_the_version(app: Flask, alice: ApiClient) -> None:
    before = state(app)
    put(alice, name="Alice")
    assert state(app) == before


@pytest.mark.parametrize("change", [
    {"departmentID": "DEP99999"}, {"isActive": False}, {"password": NEW_PASSWORD},
    {"name": "Alice Adams", "departmentID": "DEP99999"},
])
def test_a_user_cannot_change_their_department_activity_or_password(
        app: Flask, alice: ApiClient, change: dict[str, Any]) -> None:
    before, stored = state(app), stored_user(app, "alice")

    problem = assert_problem(alice.put("/api/user", json=change), 403, "forbidden_field")

    assert all(field in problem["detail"] for field in set(change) - {"name"})
    assert state(app) == before and stored_user(app, "alice") == stored
    # The old password still works.
    assert app.test_client().get("/api/user", headers=basic_header(
        "alice", PASSWORD)).status_code == 200


@pytest.mark.parametrize("change", [
    {"departmentID": DEFAULT_DEPARTMENT}, {"isActive": True},
    {"roles": ["ADMIN"]}, {"lastLoginUtc": None}, {"authSource": "ldap"},
])
def test_read_only_values_sent_back_are_ignored(app: Flask, alice: ApiClient,
                                                change: dict[str, Any]) -> None:
    """What GET answered may come back (decisions §4): fields the caller may not change are
    ignored while unchanged, and read-only ones (roles, lastLoginUtc, authSource: where the
    user signs in, decisions §19) always."""
    before, stored = state(app), stored_user(app, "alice")
    put(alice, **change)
    assert state(app) == before and stored_user(app, "alice") == stored
    assert body_of(alice.get("/api/user"), 200)["authSource"] == "local"


@pytest.mark.parametrize("change", [
    {"status": "Inactive"},
    {"passwordHash": "x"}, {"name": ""}, {"name": 7}, {"email": "x" * 256},
    {"initials": "x" * 17}, {"settings": ["dark"]}, {"settings": "dark"},
    {"isActive": "maybe"},
])
def test_bad_or_unknown_fields_are_400(app: Flask, alice: ApiClient,
                                       change: dict[str, Any]) -> None:
    before, stored = state(app), stored_user(app, "alice")
    problem = assert_problem(alice.put("/api/user", json=change), 400, "validation_failed",
                             errors=True)
    assert problem["errors"][0]["field"] == next(iter(change))
    assert state(app) == before and stored_user(app, "alice") == stored


@pytest.mark.parametrize("target", [{"userID": "bob"}, {"id": "bob"}, {"userID": "admin"},
                                    {"userID": "nobody"}])
@pytest.mark.parametrize("role", [(), ("DATA_MANAGER",), ("DATA_MANAGER_PROJECT_WRITE",)])
def test_a_non_admin_cannot_change_another_user(app: Flask, member: Callable[..., ApiClient],
                                                bob: str, role: tuple[str, ...],
                                                target: dict[str, str]) -> None:
    api = member("alice", roles=list(role))
    before, stored = state(app), stored_user(app, "bob")

    # Unknown users are 403 as well: a non-admin learns nothing about who exists.
    assert_problem(api.put("/api/user", json={**target, "name": "Hacked"}), 403,
                   "missing_scope")

    assert state(app) == before and stored_user(app, "bob") == stored


def test_the_password_change_endpoint_is_the_users_way(app: Flask, alice: ApiClient) -> None:
    """Not ``PUT /api/user`` (403 above) but ``POST /api/user/password/change``, which needs
    the current password (its details are tested in tests/auth)."""
    wrong = alice.post("/api/user/password/change", json={
        "password": NEW_PASSWORD, "repeatPassword": NEW_PASSWORD, "confirmPassword": "guess"})
    assert_problem(wrong, 400, "wrong_password", errors=True)

    response = alice.post("/api/user/password/change", json={
        "password": NEW_PASSWORD, "repeatPassword": NEW_PASSWORD, "confirmPassword": PASSWORD})

    assert response.status_code == 204
    client = app.test_client()
    assert client.get("/api/user", headers=basic_header("alice", PASSWORD)).status_code == 401
    assert client.get("/api/user", headers=basic_header("alice", NEW_PASSWORD)).status_code == 200
    assert_problem(app.test_client().post("/api/user/password/change", json={
        "password": NEW_PASSWORD, "repeatPassword": NEW_PASSWORD,
        "confirmPassword": NEW_PASSWORD}), 401, "not_authenticated")
