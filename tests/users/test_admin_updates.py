"""``PUT /api/user`` by an administrator on other users (decisions §4): moving them to another
department, deactivating and reactivating them (deactivation blocks every login method) and
resetting their password; every change is in the User's audit trail."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from tests.conftest import (
    ADMIN_PASSWORD,
    DEFAULT_DEPARTMENT,
    PASSWORD,
    ApiClient,
    basic_header,
)
from tests.contracts.problem import assert_problem
from tests.entities.conftest import body_of, fetch, save
from tests.users.conftest import USER_KEYS, state, stored_user

NEW_PASSWORD = "a-brand-new-password"


def put(api: ApiClient, status: int = 200, **body: Any) -> Any:
    return body_of(api.put("/api/user", json=body), status)


def basic_status(app: Flask, username: str, password: str) -> int:
    return app.test_client().get("/api/user", headers=basic_header(username, password)).status_code


def login_status(app: Flask, username: str, password: str) -> int:
    return app.test_client().post("/api/auth/login", json={
        "username": username, "password": password}).status_code


def test_admin_edits_another_users_profile(admin: ApiClient, alice: ApiClient) -> None:
    updated = put(admin, userID="alice", name="Alice Adams", initials="AA",
                  settings={"theme": "light"})
    assert set(updated) == USER_KEYS
    assert (updated["id"], updated["name"], updated["initials"]) == ("alice", "Alice Adams", "AA")
    assert body_of(alice.get("/api/user"), 200)["settings"] == {"theme": "light"}
    assert body_of(admin.get("/api/user"), 200)["name"] != "Alice Adams"


def test_admin_moves_a_user_and_their_access_follows(admin: ApiClient, alice: ApiClient,
                                                     department: Callable) -> None:
    chem = department("Chemistry")
    save(admin, {"eClass": "Sample", "id": "U-HOME", "departmentID": DEFAULT_DEPARTMENT},
         {"eClass": "Sample", "id": "U-CHEM", "departmentID": chem})
    fetch(alice, "Sample", "U-CHEM", 404)

    updated = put(admin, id="alice", departmentID=chem)

    assert updated["departmentID"] == chem
    assert fetch(alice, "Sample", "U-CHEM")["accessType"] == "Write"
    fetch(alice, "Sample", "U-HOME", 404)
    created = body_of(alice.post("/api/entity", json={"entities": [{"eClass": "Sample"}]}), 201)
    assert created["entities"][0]["departmentID"] == chem
    members = body_of(admin.get(f"/api/department/{chem}/access"), 200)
    assert [(e["userID"], e["isMember"]) for e in members] == [("alice", True)]
    latest = fetch(admin, "User", "alice")["auditEvents"][0]
    assert latest["userID"] == "admin"
    assert latest["changes"] == {"departmentID": {"old": DEFAULT_DEPARTMENT, "new": chem}}


@pytest.mark.parametrize("department_id", ["DEP99999", "alice", ""])
def test_moving_to_an_unknown_department_is_400(app: Flask, admin: ApiClient, alice: ApiClient,
                                                department_id: str) -> None:
    before, stored = state(app), stored_user(app, "alice")
    response = admin.put("/api/user", json={"userID": "alice", "departmentID": department_id,
                                            "name": "Renamed"})
    code = "validation_failed" if department_id == "" else "invalid_input"
    problem = assert_problem(response, 400, code, errors=True)
    assert problem["errors"][0]["field"] == "departmentID"
    assert state(app) == before and stored_user(app, "alice") == stored


def test_an_unknown_user_is_404(app: Flask, admin: ApiClient) -> None:
    before = state(app)
    assert_problem(admin.put("/api/user", json={"userID": "nobody", "name": "X"}), 404,
                   "not_found")
    assert state(app) == before


def test_deactivation_blocks_every_login_method(app: Flask, admin: ApiClient,
                                                api_as: Callable[..., ApiClient],
                                                make_user: Callable) -> None:
    make_user("alice")
    callers = {method: api_as("alice", method) for method in ("bearer", "pat", "basic")}
    cookie = api_as("alice", "cookie")
    assert all(api.get("/api/user").status_code == 200
               for api in (*callers.values(), cookie))

    updated = put(admin, userID="alice", isActive=False)

    assert updated["isActive"] is False
    for method, api in callers.items():
        code = "invalid_token" if method == "bearer" else "invalid_credentials"
        assert_problem(api.get("/api/user"), 401, code)
    # A stale cookie simply means anonymous.
    assert_problem(cookie.get("/api/user"), 401, "not_authenticated")
    assert login_status(app, "alice", PASSWORD) == 401
    detail = fetch(admin, "User", "alice")
    assert (detail["isActive"], detail["status"]) == (False, "Inactive")
    assert detail["auditEvents"][0]["changes"] == {"isActive": {"old": True, "new": False},
                                                   "status": {"old": "Active",
                                                              "new": "Inactive"}}
    # Still listed as a member of the department, and marked inactive there.
    members = body_of(admin.get(f"/api/department/{DEFAULT_DEPARTMENT}/access"), 200)
    assert {e["userID"]: e["user"]["isActive"] for e in members}["alice"] is False


def test_reactivation_lets_the_user_in_again(app: Flask, admin: ApiClient,
                                             make_user: Callable) -> None:
    make_user("alice")
    put(admin, userID="alice", isActive=False)
    assert basic_status(app, "alice", PASSWORD) == 401

    updated = put(admin, userID="alice", isActive=True)

    assert updated["isActive"] is True
    assert basic_status(app, "alice", PASSWORD) == 200
    assert login_status(app, "alice", PASSWORD) == 200
    detail = fetch(admin, "User", "alice")
    assert detail["status"] == "Active"
    assert [audit["changes"]["isActive"] for audit in detail["auditEvents"][:2]] == [
        {"old": False, "new": True}, {"old": True, "new": False}]


def test_admin_resets_a_password(app: Flask, admin: ApiClient, api_as: Callable[..., ApiClient],
                                 make_user: Callable) -> None:
    make_user("alice")
    bearer, cookie = api_as("alice", "bearer"), api_as("alice", "cookie")

    updated = put(admin, userID="alice", password=NEW_PASSWORD)

    assert set(updated) == USER_KEYS  # never the password or its hash
    assert basic_status(app, "alice", PASSWORD) == 401
    assert basic_status(app, "alice", NEW_PASSWORD) == 200
    assert login_status(app, "alice", NEW_PASSWORD) == 200
    # Her other logins end.
    assert_problem(bearer.get("/api/user"), 401, "invalid_token")
    assert_problem(cookie.get("/api/user"), 401, "not_authenticated")
    assert all(NEW_PASSWORD not in str(audit)
               for audit in fetch(admin, "User", "alice")["auditEvents"])


def test_an_admin_resetting_their_own_password_stays_logged_in(app: Flask,
                                                               admin: ApiClient) -> None:
    put(admin, password=NEW_PASSWORD)
    assert body_of(admin.get("/api/user"), 200)["id"] == "admin"
    assert basic_status(app, "admin", ADMIN_PASSWORD) == 401
    assert basic_status(app, "admin", NEW_PASSWORD) == 200


@pytest.mark.parametrize("password", ["short", "", "x" * 1025])
def test_a_weak_password_is_400_and_the_old_one_stays(app: Flask, admin: ApiClient,
                                                      alice: ApiClient, password: str) -> None:
    before, stored = state(app), stored_user(app, "alice")
    response = admin.put("/api/user", json={"userID": "alice", "password": password})
    problem = assert_problem(response, 400, response.get_json()["code"], errors=True)
    assert problem["code"] in {"invalid_input", "validation_failed"}
    assert problem["errors"][0]["field"] == "password"
    assert state(app) == before and stored_user(app, "alice") == stored
    # Her login was not ended by the rejected reset.
    assert alice.get("/api/user").status_code == 200


def test_userid_and_id_must_agree(app: Flask, admin: ApiClient, alice: ApiClient,
                                  bob: str) -> None:
    before = state(app)
    problem = assert_problem(admin.put("/api/user", json={
        "userID": "alice", "id": "bob", "name": "Which one"}), 400, "invalid_input",
        errors=True)
    assert {error["field"] for error in problem["errors"]} == {"id"}
    assert state(app) == before
    # Both naming the same user is fine.
    assert put(admin, userID="bob", id="bob", name="Bob B")["name"] == "Bob B"
