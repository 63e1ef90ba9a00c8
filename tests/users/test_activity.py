"""Deactivation ends logins; status and isActive agree through every door; roles are audited."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask

from tests.conftest import PASSWORD, ApiClient, bearer_header, login
from tests.entities.conftest import fetch, save


def test_reactivation_does_not_revive_logins_from_before(app: Flask, admin: ApiClient,
                                                         make_user: Callable) -> None:
    make_user("alice")
    client = app.test_client()
    tokens = login(client, "alice")
    assert admin.put("/api/user", json={"userID": "alice", "isActive": False}).status_code == 200
    assert admin.put("/api/user", json={"userID": "alice", "isActive": True}).status_code == 200

    stale = app.test_client().get("/api/auth/user", headers=bearer_header(tokens["accessToken"]))
    assert stale.status_code == 401
    refreshed = app.test_client().post("/api/auth/refresh",
                                       json={"refreshToken": tokens["refreshToken"]})
    assert refreshed.status_code == 401
    assert client.get("/api/auth/user").get_json()["contextUser"]["isAuthenticated"] is False
    login(app.test_client(), "alice", PASSWORD)  # a new login works


@pytest.mark.parametrize("sent, expected", [
    ({"isActive": False}, ("Inactive", False)),
    ({"status": "Inactive"}, ("Inactive", False)),
])
def test_the_entity_api_keeps_status_and_is_active_in_step(
        app: Flask, admin: ApiClient, make_user: Callable, sent: dict,
        expected: tuple[str, bool]) -> None:
    make_user("alice")
    save(admin, {"eClass": "User", "id": "alice", **sent}, status=200)
    detail = fetch(admin, "User", "alice")
    assert (detail["status"], detail["isActive"]) == expected
    assert app.test_client().post("/api/auth/login", json={
        "username": "alice", "password": PASSWORD}).status_code == 401
    save(admin, {"eClass": "User", "id": "alice", "status": "Active"}, status=200)
    assert fetch(admin, "User", "alice")["isActive"] is True


def test_role_changes_are_in_the_users_audit_trail(admin: ApiClient,
                                                    make_user: Callable) -> None:
    make_user("alice")
    before = fetch(admin, "User", "alice")["version"]
    assert admin.put("/api/userRole/assign", json={"name": "DATA_MANAGER",
                                                   "userID": "alice"}).status_code == 200
    assert admin.put("/api/userRole/revoke", json={"name": "DATA_MANAGER",
                                                   "userID": "alice"}).status_code == 200
    detail = fetch(admin, "User", "alice")
    assert detail["version"] == before + 2
    assert [audit["changes"] for audit in detail["auditEvents"][:2]] == [
        {"roles": {"old": ["DATA_MANAGER"], "new": []}},
        {"roles": {"old": [], "new": ["DATA_MANAGER"]}}]
    assert all(audit["userID"] == "admin" for audit in detail["auditEvents"][:2])


def test_assigning_a_role_twice_changes_nothing(admin: ApiClient, make_user: Callable) -> None:
    make_user("alice")
    admin.put("/api/userRole/assign", json={"name": "DATA_MANAGER", "userID": "alice"})
    version = fetch(admin, "User", "alice")["version"]
    again = admin.put("/api/userRole/assign", json={"name": "DATA_MANAGER", "userID": "alice"})
    assert again.status_code == 200
    assert fetch(admin, "User", "alice")["version"] == version
