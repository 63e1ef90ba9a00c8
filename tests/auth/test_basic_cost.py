"""The cost of Basic ``username:password`` (issue 9 §4): the password is verified outside any
write lock, and a success is remembered briefly in the worker (``labapp.auth.basic_cache``)
so that a script's next calls cost what a PAT call costs. Failures are never remembered; a
changed password, a reset or a deactivation ends what was remembered at once, also when
another worker made the change."""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator

import pytest
from argon2 import PasswordHasher
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import text

from labapp.auth import basic_cache
from labapp.auth import secrets as password_secrets
from labapp.db import db, sqlite_path, transaction
from labapp.model import User
from labapp.users.service import create_user
from tests.auth.checks import database, failures_of, problem
from tests.conftest import (
    ADMIN_PASSWORD,
    BACKEND,
    DEFAULT_DEPARTMENT,
    PASSWORD,
    basic_header,
    run_init,
)

NEW_PASSWORD = "a-brand-new-password"


class CountingHasher(PasswordHasher):
    """The cheap test hasher, counting verifications and running ``during`` inside each."""

    def __init__(self) -> None:
        super().__init__(time_cost=1, memory_cost=1024, parallelism=1)
        self.verifications = 0
        self.during: Callable[[], None] | None = None

    def verify(self, hash: str | bytes, password: str | bytes) -> bool:
        self.verifications += 1
        if self.during is not None:
            self.during()
        return super().verify(hash, password)


@pytest.fixture
def hasher(monkeypatch: pytest.MonkeyPatch) -> CountingHasher:
    counting = CountingHasher()
    monkeypatch.setattr(password_secrets, "hasher", counting)
    return counting


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The cache's clock, moved by hand: ``clock[0] += 301`` is five minutes later."""
    now = [1_000.0]
    monkeypatch.setattr(basic_cache, "clock", lambda: now[0])
    yield now


def call(client: FlaskClient, username: str, password: str):
    return client.get("/api/auth/user", headers=basic_header(username, password))


def test_a_second_call_does_not_verify_the_password_again(bare_client: FlaskClient,
                                                          alice: str,
                                                          hasher: CountingHasher) -> None:
    first = call(bare_client, alice, PASSWORD)
    second = call(bare_client, alice, PASSWORD)

    assert first.status_code == second.status_code == 200
    assert second.get_json()["method"] == "basic"
    assert second.get_json()["contextUser"]["name"] == alice
    assert hasher.verifications == 1


def test_failures_are_never_remembered(app: Flask, bare_client: FlaskClient, alice: str,
                                       hasher: CountingHasher) -> None:
    assert call(bare_client, alice, PASSWORD).status_code == 200

    for _ in range(3):
        problem(call(bare_client, alice, "wrong password!"), 401, "invalid_credentials")

    assert hasher.verifications == 4
    assert failures_of(app, alice) == 3


def test_only_the_right_password_finds_the_memory(bare_client: FlaskClient, alice: str,
                                                  bob: str, hasher: CountingHasher) -> None:
    assert call(bare_client, alice, PASSWORD).status_code == 200

    # Same password, other user; same user, password differing in case.
    assert call(bare_client, bob, PASSWORD).status_code == 200
    problem(call(bare_client, alice, PASSWORD.upper()), 401, "invalid_credentials")
    assert hasher.verifications == 3


def test_the_memory_holds_no_password(app: Flask, bare_client: FlaskClient, alice: str) -> None:
    call(bare_client, alice, PASSWORD)

    with app.app_context():
        memory = basic_cache.memory()
    stored = repr(vars(memory)) + repr(list(memory._entries.items()))
    assert PASSWORD not in stored and PASSWORD.encode().hex() not in stored


def test_a_remembered_verification_expires(bare_client: FlaskClient, alice: str,
                                           hasher: CountingHasher, clock: list[float],
                                           app: Flask) -> None:
    lifetime = app.config["LABAPP"]["BASIC_AUTH_CACHE_SECONDS"]
    call(bare_client, alice, PASSWORD)
    clock[0] += lifetime - 1
    call(bare_client, alice, PASSWORD)
    assert hasher.verifications == 1

    clock[0] += 2
    assert call(bare_client, alice, PASSWORD).status_code == 200

    assert hasher.verifications == 2


def test_a_password_changed_by_another_worker_ends_the_memory(app: Flask,
                                                              bare_client: FlaskClient,
                                                              alice: str) -> None:
    assert call(bare_client, alice, PASSWORD).status_code == 200
    # Another worker or host changes the password: only the database knows.
    with database(app) as session:
        session.get(User, alice).password_hash = password_secrets.hash_password(NEW_PASSWORD)

    problem(call(bare_client, alice, PASSWORD), 401, "invalid_credentials")
    assert call(bare_client, alice, NEW_PASSWORD).status_code == 200


def test_a_deactivation_by_another_worker_ends_the_memory(bare_client: FlaskClient,
                                                          alice: str,
                                                          deactivate: Callable[[str], None]
                                                          ) -> None:
    assert call(bare_client, alice, PASSWORD).status_code == 200

    deactivate(alice)  # straight in the database, as another worker would

    problem(call(bare_client, alice, PASSWORD), 401, "invalid_credentials")


def remembered_users(app: Flask) -> list[str]:
    with app.app_context():
        return sorted(entry.username for entry in basic_cache.memory()._entries.values())


def test_a_password_change_drops_the_users_entries_in_this_worker(
        app: Flask, bare_client: FlaskClient, alice: str, bob: str) -> None:
    with app.app_context():
        basic_cache.memory()._entries.clear()  # what earlier tests left
    call(bare_client, alice, PASSWORD)
    call(bare_client, bob, PASSWORD)
    assert remembered_users(app) == [alice, bob]

    changed = bare_client.post("/api/user/password/change", headers=basic_header(alice, PASSWORD),
                               json={"password": NEW_PASSWORD, "repeatPassword": NEW_PASSWORD,
                                     "confirmPassword": PASSWORD})

    assert changed.status_code == 204
    assert remembered_users(app) == [bob]
    problem(call(bare_client, alice, PASSWORD), 401, "invalid_credentials")


def test_a_throttled_client_cannot_use_the_memory(app: Flask, bare_client: FlaskClient,
                                                  alice: str) -> None:
    # A script keeps alice's entry warm; a guesser at the same address is throttled, and a
    # right guess must be refused like a wrong one, or the memory would tell them.
    assert call(bare_client, alice, PASSWORD).status_code == 200
    limit = app.config["LABAPP"]["LOGIN_MAX_FAILURES"]
    for _ in range(limit):
        call(bare_client, alice, "a wrong guess")

    problem(call(bare_client, alice, PASSWORD), 429, "too_many_requests")


def test_the_memory_can_be_switched_off(fresh_app: Callable[..., Flask],
                                        hasher: CountingHasher) -> None:
    uncached = fresh_app(BASIC_AUTH_CACHE_SECONDS=0)
    run_init(uncached)
    client = uncached.test_client(use_cookies=False)
    hasher.verifications = 0

    for _ in range(3):
        assert call(client, "admin", ADMIN_PASSWORD).status_code == 200

    assert hasher.verifications == 3


@pytest.fixture
def unbound_app(fresh_app: Callable[..., Flask]) -> Flask:
    """An application on its own database with its real engine (no test transaction), as
    gunicorn workers run it, with alice (password PASSWORD)."""
    application = fresh_app(initialised=True)
    with application.app_context(), transaction():
        create_user(username="alice", name="Alice", department_id=DEFAULT_DEPARTMENT,
                    password=PASSWORD, created_by="admin")
    return application


def _write_from_elsewhere(app: Flask) -> None:
    """Write to the database from another connection, waiting for no lock."""
    url = app.config["SQLALCHEMY_DATABASE_URI"]
    if BACKEND == "sqlite":
        other = sqlite3.connect(sqlite_path(url), timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # fails at once while someone holds the lock
            other.execute("UPDATE app_user SET email = 'probe@example.org' WHERE id = 'alice'")
            other.execute("ROLLBACK")
        finally:
            other.close()
        return
    with db.engine.connect() as other:
        other.execute(text("SET lock_timeout = 1"))
        other.execute(text("UPDATE app_user SET email = 'probe@example.org' WHERE id = 'alice'"))
        other.rollback()


@pytest.mark.parametrize("door", ["basic", "login", "password change"])
def test_the_password_is_verified_while_others_can_write(unbound_app: Flask,
                                                         hasher: CountingHasher,
                                                         door: str) -> None:
    probes: list[str] = []

    def probe() -> None:
        _write_from_elsewhere(unbound_app)
        probes.append("written")

    hasher.during = probe
    client = unbound_app.test_client(use_cookies=False)
    if door == "basic":
        response = call(client, "alice", PASSWORD)
    elif door == "login":
        response = client.post("/api/auth/login",
                               json={"username": "alice", "password": PASSWORD})
    else:
        response = client.post("/api/user/password/change", headers=basic_header(
            "alice", PASSWORD), json={"password": NEW_PASSWORD, "repeatPassword": NEW_PASSWORD,
                                      "confirmPassword": PASSWORD})

    assert response.status_code in (200, 204), response.get_data(as_text=True)
    assert probes == ["written"] * hasher.verifications
    assert hasher.verifications == (2 if door == "password change" else 1)
