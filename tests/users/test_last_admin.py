"""The installation never loses its last active administrator, through any door: revoking
ADMIN, deactivating through ``PUT /api/user`` or through ``POST /api/entity`` (409) — also
when two administrators remove each other at the same moment."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from flask import Flask
from sqlalchemy.engine import make_url

from labapp.db import db, transaction
from labapp.model import User
from labapp.users.service import create_user
from tests.conftest import (
    BACKEND,
    DEFAULT_DEPARTMENT,
    PASSWORD,
    ApiClient,
    bearer_header,
    login,
)
from tests.contracts.problem import assert_problem
from tests.entities.conftest import body_of
from tests.sequences.workers import BARRIER_TIMEOUT_S
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


# --- two administrators removing each other at once (PostgreSQL) ---------------------------
# Each request counts the other active administrators and then writes. Without a lock both
# can count before either commits, and both succeed. To make that interleaving certain
# rather than lucky, the test holds a SHARE lock on audit_event: every door writes its audit
# event after its check, so each request is stopped there, past its check, until the test
# lets go. The test waits until PostgreSQL itself shows both requests waiting on a lock
# (pg_stat_activity), then releases: with the admin rows locked, the second request was
# waiting for the first one's lock instead, and counts again once the first has committed.

RACES = {"put-put": (deactivate_by_put, deactivate_by_put),
         "entity-revoke": (deactivate_by_entity, revoke_admin),
         "revoke-put": (revoke_admin, deactivate_by_put)}
WAIT_S = 30


def _dsn(app: Flask) -> str:
    url = make_url(app.config["SQLALCHEMY_DATABASE_URI"])
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@contextmanager
def audit_writes_held(app: Flask) -> Iterator[psycopg.Connection]:
    """A connection holding a lock that makes every audit event insert wait; let go on exit."""
    with psycopg.connect(_dsn(app)) as holder:
        holder.execute("LOCK TABLE audit_event IN SHARE MODE")
        try:
            yield holder
        finally:
            holder.rollback()


def wait_for_lock_waiters(holder: psycopg.Connection, count: int) -> None:
    """Return once ``count`` other sessions of the database wait on a lock (PostgreSQL's own
    view of the requests; polled, since PostgreSQL cannot notify it)."""
    deadline = time.monotonic() + WAIT_S
    waiting = -1
    while time.monotonic() < deadline:
        # The holder is inside a transaction, which would keep seeing its first snapshot.
        holder.execute("SELECT pg_stat_clear_snapshot()")
        waiting = holder.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'").fetchone()[0]
        if waiting >= count:
            return
        time.sleep(0.01)
    raise AssertionError(f"{waiting} requests waiting on a lock after {WAIT_S} s, not {count}")


def active_admins(app: Flask) -> list[str]:
    with app.app_context():
        users = db.session.query(User).filter(User.is_active.is_(True)).order_by(User.id)
        active = [user.id for user in users if "ADMIN" in user.roles]
        db.session.remove()
    return active


@pytest.mark.skipif(BACKEND != "postgresql",
                    reason="PostgreSQL row locks; on SQLite BEGIN IMMEDIATE serialises writers")
@pytest.mark.parametrize("race", RACES)
def test_two_admins_removing_each_other_at_once_leave_one(
        fresh_app: Callable[..., Flask], race: str) -> None:
    app = fresh_app(initialised=True)
    with app.app_context(), transaction():
        for username in ("ada", "bob"):
            create_user(username=username, name=username.title(),
                        department_id=DEFAULT_DEPARTMENT, password=PASSWORD, roles=["ADMIN"],
                        created_by="tests")
    clients = {username: ApiClient(app.test_client(use_cookies=False), bearer_header(
        login(app.test_client(), username)["accessToken"]), "bearer")
        for username in ("ada", "bob")}
    body_of(deactivate_by_put(clients["ada"], "admin"), 200)
    assert active_admins(app) == ["ada", "bob"]
    ada_door, bob_door = RACES[race]
    start = threading.Barrier(2)

    def remove(door: Callable[[ApiClient, str], Any], api: ApiClient, other: str):
        start.wait(BARRIER_TIMEOUT_S)
        return door(api, other)

    with ThreadPoolExecutor(2) as pool, audit_writes_held(app) as holder:
        answers = [pool.submit(remove, ada_door, clients["ada"], "bob"),
                   pool.submit(remove, bob_door, clients["bob"], "ada")]
        wait_for_lock_waiters(holder, 2)
    responses = [answer.result() for answer in answers]

    assert sorted(response.status_code for response in responses) == [200, 409], [
        response.get_json() for response in responses]
    (refused,) = [response for response in responses if response.status_code == 409]
    assert_problem(refused, 409, "last_admin")
    assert len(active_admins(app)) == 1
