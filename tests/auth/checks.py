"""Assertions and small helpers shared by the authentication tests."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from flask import Flask
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from werkzeug.test import TestResponse

from labapp.auth import secrets
from labapp.db import db, transaction
from labapp.model import LoginFailure, LoginSession
from labapp.model.types import utc_now

# Taken at import, before tests/auth/conftest.py swaps in a cheap hasher.
PRODUCTION_HASHER = secrets.hasher
SESSION_COOKIE = "labapp_session"
REFRESH_COOKIE = "labapp_refresh"
FORBIDDEN_KEY_PARTS = ("password", "hash", "secret", "token")
CLIENT_ADDRESS = "127.0.0.1"  # where the Flask test client's requests come from


def problem(response: TestResponse, status: int, code: str) -> dict[str, Any]:
    """Assert ``response`` is the problem document of ``status``/``code`` and return its body."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    body = response.get_json()
    assert body["status"] == status
    assert body["code"] == code, body
    assert body["type"] == f"/problems/{code}"
    assert body["title"] and body["detail"]
    if status == 401:
        assert "Bearer" in response.headers["WWW-Authenticate"]
        assert 'Basic realm="labapp"' in response.headers["WWW-Authenticate"]
    return body


def error_fields(body: dict[str, Any]) -> set[str]:
    return {error["field"] for error in body.get("errors", [])}


def set_cookies(response: TestResponse) -> dict[str, tuple[str, dict[str, str]]]:
    """The cookies a response sets: name → (value, {lower-case attribute: value})."""
    found: dict[str, tuple[str, dict[str, str]]] = {}
    for header in response.headers.getlist("Set-Cookie"):
        name_value, *parts = (part.strip() for part in header.split(";"))
        name, _, value = name_value.partition("=")
        attributes = {}
        for part in parts:
            key, _, attribute = part.partition("=")
            attributes[key.lower()] = attribute
        found[name] = (value, attributes)
    return found


def secret_keys(document: Any, path: str = "") -> list[str]:
    """Every key in a JSON document whose name suggests a secret (password, hash, ...)."""
    found: list[str] = []
    if isinstance(document, dict):
        for key, value in document.items():
            if any(part in key.lower() for part in FORBIDDEN_KEY_PARTS):
                found.append(f"{path}.{key}")
            found.extend(secret_keys(value, f"{path}.{key}"))
    elif isinstance(document, list):
        for index, item in enumerate(document):
            found.extend(secret_keys(item, f"{path}[{index}]"))
    return found


@contextmanager
def database(app: Flask) -> Iterator[Session]:
    """A unit of work on the test database (committed to the test's savepoint)."""
    with app.app_context(), transaction() as session:
        yield session


def seed_failures(app: Flask, count: int, *, username: str = "someone",
                  address: str = CLIENT_ADDRESS, age: timedelta = timedelta(0)) -> None:
    """Record ``count`` failed logins that happened ``age`` ago, without any hashing."""
    at = utc_now() - age
    with database(app) as session:
        session.add_all(LoginFailure(username=username, address=address, at_utc=at)
                        for _ in range(count))


def failures_of(app: Flask, username: str) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(LoginFailure)
                                 .where(LoginFailure.username == username))


def sessions_of(app: Flask, username: str) -> list[LoginSession]:
    """The user's login sessions, oldest first."""
    with app.app_context():
        return list(db.session.scalars(select(LoginSession)
                                       .where(LoginSession.user_id == username)
                                       .order_by(LoginSession.created_utc)))


def parse_utc(value: str) -> datetime:
    assert value.endswith("Z"), value
    return datetime.fromisoformat(value)
