"""TOTP secrets are kept sealed under SECRET_KEY (labapp/sealing.py): the database holds no
secret in clear, a key rotated into SECRET_KEY_FALLBACKS keeps every factor working, and a
key lost altogether leaves each owner their recovery codes."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from flask import Flask
from flask.testing import FlaskClient

from labapp import sealing
from labapp.auth import second_factor
from labapp.auth.second_factor import InvalidCode
from labapp.db import db, transaction
from labapp.model import SecondFactor
from labapp.users.service import create_user
from tests.auth.checks import database
from tests.auth.factors import code, enrol
from tests.conftest import DEFAULT_DEPARTMENT, PASSWORD, run_init


@contextmanager
def secret_keys(app: Flask, key: str, *fallbacks: str) -> Iterator[None]:
    """The application runs with ``SECRET_KEY = key`` and these fallbacks in the block."""
    before = app.config["SECRET_KEY"], app.config["SECRET_KEY_FALLBACKS"]
    app.config["SECRET_KEY"], app.config["SECRET_KEY_FALLBACKS"] = key, list(fallbacks)
    try:
        yield
    finally:
        app.config["SECRET_KEY"], app.config["SECRET_KEY_FALLBACKS"] = before


def stored_secret(app: Flask, user_id: str) -> str:
    with app.app_context():
        factor = db.session.get(SecondFactor, user_id)
        assert factor is not None
        return factor.secret


def test_the_database_holds_the_secret_sealed_and_codes_still_verify(
        app: Flask, alice: str) -> None:
    with database(app):
        pending = second_factor.begin_enrolment(alice)
    stored = stored_secret(app, alice)
    assert sealing.is_sealed(stored) and pending not in stored
    with database(app):
        assert second_factor.pending_secret(alice) == pending
        second_factor.confirm_enrolment(alice, code(pending, -1))
    with database(app):
        assert second_factor.verify(alice, code(pending)) == second_factor.TOTP


def test_a_key_rotated_into_the_fallbacks_keeps_the_factor_working(
        app: Flask, client: FlaskClient, alice: str) -> None:
    secret, _codes = enrol(app, alice)
    old_key = app.config["SECRET_KEY"]
    with secret_keys(app, "a new key after the rotation", old_key):
        answer = client.post("/api/auth/login", json={
            "username": alice, "password": PASSWORD, "code": code(secret)})
        assert answer.status_code == 200, answer.get_json()


def test_without_the_old_key_the_totp_is_refused_and_a_recovery_code_signs_in(
        app: Flask, client: FlaskClient, alice: str, caplog: pytest.LogCaptureFixture) -> None:
    secret, codes = enrol(app, alice)
    with secret_keys(app, "a key that never sealed anything"):
        refused = client.post("/api/auth/login", json={
            "username": alice, "password": PASSWORD, "code": code(secret)})
        assert refused.status_code == 401
        assert refused.get_json()["code"] == "invalid_code"
        assert f"The second factor of '{alice}' cannot be read" in caplog.text
        with database(app), pytest.raises(InvalidCode):
            second_factor.verify(alice, code(secret))
        answer = client.post("/api/auth/login", json={
            "username": alice, "password": PASSWORD, "code": codes[0]})
        assert answer.status_code == 200, answer.get_json()


def test_init_seals_anew_under_the_new_key_so_the_old_one_can_go(
        fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app(initialised=True)
    with app.app_context(), transaction():
        create_user(username="dora", name="Dora", department_id=DEFAULT_DEPARTMENT,
                    password=PASSWORD, created_by="admin")
    secret, _codes = enrol(app, "dora")
    old_key = app.config["SECRET_KEY"]
    with secret_keys(app, "the key after rotation", old_key):
        assert "sealed 1 secret(s) under SECRET_KEY" in run_init(app)
        assert "anew" not in run_init(app)  # nothing is left to move
    with secret_keys(app, "the key after rotation"), database(app):
        assert second_factor.verify("dora", code(secret)) == second_factor.TOTP
