"""The installation never loses its last active administrator, through any door: revoking
ADMIN, deactivating through ``PUT /api/user`` or through ``POST /api/entity`` (409)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import body_of
from tests.users.conftest import state, stored_user


def revoke_admin(api: ApiClient, user_id: str = "admin"):
    return api.put("/api/userRole/revoke", json={"name": "ADMIN", "userID": user_id})


def deactivate_by_put(api: ApiClient, user_id: str = "admin"):
    return api.put("/api/user", json={"userID": user_id, "isActive": False})


def deactivate_by_entity(api: ApiClient, user_id: str = "admin"):
    return api.post("/api/entity", json={"entities": [
        {"eClass": "User", "id": user_id, "isActive": False}]})


def deactivate_self(api: ApiClient, user_id: str = "admin"):
    return api.put("/api/user", json={"isActive": False})


DOORS = {"revoke": revoke_admin, "put": deactivate_by_put, "put-self": deactivate_self,
         "entity": deactivate_by_entity}


def still_admin(app: Flask, user_id: str = "admin") -> bool:
    stored = stored_user(app, user_id)
    return stored["isActive"] and "ADMIN" in stored["roles"]


@pytest.mark.parametrize("door", DOORS)
def test_the_last_active_admin_is_kept(app: Flask, admin: ApiClient, door: str) -> None:
    before = state(app)

    problem = assert_problem(DOORS[door](admin), 409, "last_admin")

    assert "administrator" in problem["detail"]
    assert state(app) == before and still_admin(app)
    assert admin.get("/api/userRole").status_code == 200


@pytest.mark.parametrize("door", DOORS)
def test_an_inactive_second_admin_does_not_count(app: Flask, admin: ApiClient,
                                                 make_user: Callable, door: str) -> None:
    make_user("ada", roles=["ADMIN"])
    body_of(deactivate_by_put(admin, "ada"), 200)
    before = state(app)

    assert_problem(DOORS[door](admin), 409, "last_admin")

    assert state(app) == before and still_admin(app)


def test_the_guard_holds_within_a_batch(app: Flask, admin: ApiClient,
                                        make_user: Callable) -> None:
    """A batch that deactivates both administrators must fail as a whole."""
    make_user("ada", roles=["ADMIN"])
    before = state(app)

    response = admin.post("/api/entity", json={"entities": [
        {"eClass": "User", "id": "ada", "isActive": False},
        {"eClass": "User", "id": "admin", "isActive": False}]})

    assert_problem(response, 409, "last_admin")
    assert state(app) == before and still_admin(app) and still_admin(app, "ada")


@pytest.mark.parametrize("door", DOORS)
def test_with_a_second_active_admin_it_works(app: Flask, admin: ApiClient,
                                             member: Callable[..., ApiClient],
                                             door: str) -> None:
    ada = member("ada", roles=["ADMIN"])

    response = DOORS[door](admin)

    assert response.status_code == 200, response.get_json()
    assert not still_admin(app)
    # ada is now the last one, and is kept in turn.
    assert_problem(DOORS[door](ada, "ada"), 409, "last_admin")
    assert still_admin(app, "ada")


def test_other_changes_to_the_last_admin_are_fine(app: Flask, admin: ApiClient) -> None:
    assert body_of(admin.put("/api/user", json={"name": "Root", "isActive": True}),
                   200)["isActive"] is True
    user = body_of(admin.put("/api/userRole/assign",
                             json={"name": "DATA_MANAGER", "userID": "admin"}), 200)
    assert user["roles"] == ["ADMIN", "DATA_MANAGER"]
    user = body_of(admin.put("/api/userRole/revoke",
                             json={"name": "DATA_MANAGER", "userID": "admin"}), 200)
    assert user["roles"] == ["ADMIN"]
    saved = body_of(admin.post("/api/entity", json={"entities": [
        {"eClass": "User", "id": "admin", "initials": "RT", "isActive": True}]}), 200)
    assert saved["entities"][0]["initials"] == "RT"
    assert still_admin(app)


def test_deactivating_an_ordinary_user_through_the_entity_api(
        app: Flask, admin: ApiClient, alice: ApiClient) -> None:
    """The other door works too, and blocks the user's logins like ``PUT /api/user``."""
    body_of(deactivate_by_entity(admin, "alice"), 200)
    assert_problem(alice.get("/api/user"), 401, "invalid_token")
    assert not stored_user(app, "alice")["isActive"]


def test_users_are_never_hard_deleted(app: Flask, admin: ApiClient, alice: ApiClient) -> None:
    before = state(app)
    attempts: dict[str, Any] = {
        "/api/user": 405, "/api/user/alice": 404, "/api/entity/User/alice": 405,
        "/api/department/alice": 404, "/api/project/alice": 404}
    for path, status in attempts.items():
        response = admin.delete(path)
        assert response.status_code == status, path
        assert response.mimetype == "application/problem+json"
    assert state(app) == before
    assert alice.get("/api/user").status_code == 200
