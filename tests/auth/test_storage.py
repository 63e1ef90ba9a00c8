"""Secrets at rest: Argon2id password hashes, SHA-256 hashes of refresh tokens and PATs."""
from __future__ import annotations

import hashlib
from collections.abc import Callable

from argon2 import Type
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, text

from labapp.auth import secrets
from labapp.db import db
from labapp.model import LoginSession, PersonalAccessToken, RefreshToken, User
from tests.auth.checks import PRODUCTION_HASHER
from tests.conftest import PASSWORD, bearer_header, login


def sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def every_value_of(app: Flask, *tables: str) -> str:
    """Every cell of ``tables``, as one string to search for leaked secrets."""
    with app.app_context():
        rows = [row for table in tables
                for row in db.session.execute(text(f"SELECT * FROM {table}"))]
    return "\n".join(str(cell) for row in rows for cell in row)


def test_passwords_are_stored_as_argon2id_hashes(app: Flask, alice: str) -> None:
    with app.app_context():
        stored = db.session.get(User, alice).password_hash

    assert stored.startswith("$argon2id$")
    assert PASSWORD not in stored
    assert PASSWORD not in every_value_of(app, "app_user")


def test_refresh_tokens_are_stored_only_as_sha256(app: Flask, bare_client: FlaskClient,
                                                  alice: str) -> None:
    first = login(bare_client, alice)
    second = bare_client.post("/api/auth/refresh",
                              json={"refreshToken": first["refreshToken"]}).get_json()

    with app.app_context():
        hashes = set(db.session.scalars(select(RefreshToken.token_hash)))
    assert hashes == {sha256(first["refreshToken"]), sha256(second["refreshToken"])}
    stored = every_value_of(app, "refresh_token", "login_session")
    for value in (first["refreshToken"], second["refreshToken"]):
        assert value not in stored


def test_pats_are_stored_only_as_sha256(app: Flask, bare_client: FlaskClient,
                                        alice: str) -> None:
    token = login(bare_client, alice)["accessToken"]
    value = bare_client.post("/api/user/pat", json={"name": "script"},
                             headers=bearer_header(token)).get_json()["value"]

    with app.app_context():
        [stored_hash] = db.session.scalars(select(PersonalAccessToken.token_hash))
    assert stored_hash == sha256(value)
    assert value not in every_value_of(app, "personal_access_token")


def test_a_failed_login_stores_no_password(app: Flask, bare_client: FlaskClient,
                                           alice: str) -> None:
    bare_client.post("/api/auth/login", json={"username": alice, "password": "my secret guess"})

    assert "my secret guess" not in every_value_of(app, "login_failure")


def test_a_session_id_alone_is_not_a_credential(app: Flask, bare_client: FlaskClient,
                                                alice: str) -> None:
    login(bare_client, alice)
    with app.app_context():
        [session_id] = db.session.scalars(select(LoginSession.id))

    for header in (bearer_header(session_id), {"Cookie": f"labapp_session={session_id}"}):
        answer = bare_client.get("/api/user/pat", headers=header)
        assert answer.status_code == 401


def test_the_user_answer_never_contains_the_hash(api_as: Callable, alice: str) -> None:
    caller = api_as(alice, "bearer")

    text_of_answer = caller.get("/api/auth/user").get_data(as_text=True)

    assert "$argon2" not in text_of_answer
    assert "passwordHash" not in text_of_answer and "password_hash" not in text_of_answer


def test_the_production_hasher_is_memory_hard() -> None:
    # OWASP's floor for Argon2id: 19 MiB of memory and two passes (or more memory).
    assert PRODUCTION_HASHER.type is Type.ID
    assert PRODUCTION_HASHER.memory_cost >= 19 * 1024
    assert PRODUCTION_HASHER.time_cost >= 2
    assert PRODUCTION_HASHER.hash("x").startswith("$argon2id$v=19$m=")


def test_an_unknown_user_costs_a_verification_at_the_hasher_in_use() -> None:
    """An unknown username's password is verified against a hash of the hasher in use (its
    cost, so the answer takes as long either way), made once per process at its first use."""
    assert secrets.verify_password(None, "whatever password") is False
    dummy = secrets._dummy_hash(secrets.hasher)
    assert not secrets.hasher.check_needs_rehash(dummy)
    assert secrets._dummy_hash(secrets.hasher) == dummy
    assert PRODUCTION_HASHER.check_needs_rehash(dummy)  # the suite's cheap hasher, not production's
