"""Contention is never a 500: the database refusing a write because of other writers is an
answer the client can act on (send the request again), and nothing is half-written."""
from __future__ import annotations

import sqlite3
from collections.abc import Callable

import pytest
from flask import Flask
from sqlalchemy import text

from labapp.db import db, sqlite_path
from tests.conftest import ADMIN_PASSWORD, BACKEND, basic_header
from tests.contracts.problem import assert_problem

ADMIN = basic_header("admin", ADMIN_PASSWORD)


def _sample(name: str) -> dict:
    return {"entities": [{"eClass": "Sample", "name": name}]}


def _samples_named(app: Flask, name: str) -> int:
    with app.app_context():
        try:
            return db.session.scalar(text("SELECT count(*) FROM entity WHERE name = :name"),
                                     {"name": name})
        finally:
            db.session.remove()


@pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite's write lock")
def test_a_write_lock_held_too_long_is_503_with_retry_after(
        fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app(initialised=True, SQLITE_BUSY_TIMEOUT_MS=50)
    client = app.test_client()
    assert client.get("/api/auth/user", headers=ADMIN).status_code == 200  # password checked
    other_writer = sqlite3.connect(sqlite_path(app.config["SQLALCHEMY_DATABASE_URI"]),
                                   isolation_level=None)
    try:
        other_writer.execute("BEGIN IMMEDIATE")
        response = client.post("/api/entity", json=_sample("while-locked"), headers=ADMIN)
        assert_problem(response, 503, "database_busy")
        assert response.headers["Retry-After"] == "1"
    finally:
        other_writer.execute("ROLLBACK")
        other_writer.close()
    assert _samples_named(app, "while-locked") == 0
    again = client.post("/api/entity", json=_sample("while-locked"), headers=ADMIN)
    assert again.status_code == 201, again.get_json()


@pytest.mark.skipif(BACKEND != "postgresql", reason="PostgreSQL's deadlock detection")
@pytest.mark.parametrize("state", ["deadlock_detected", "serialization_failure"])
def test_a_deadlock_or_serialization_failure_is_409_write_conflict(
        fresh_app: Callable[..., Flask], state: str) -> None:
    app = fresh_app(initialised=True)
    with app.app_context():
        # The server raises the very error it raises when it breaks a deadlock, on the write
        # of one marked row, so the request meets it where a real conflict would strike.
        db.session.execute(text(f"""
            CREATE FUNCTION conflict_on_marked_row() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'simulated conflict' USING ERRCODE = '{state}'; END $$;
            CREATE TRIGGER conflict_on_marked_row BEFORE INSERT ON entity FOR EACH ROW
            WHEN (NEW.name = 'conflicted') EXECUTE FUNCTION conflict_on_marked_row();"""))
        db.session.commit()
        db.session.remove()
    client = app.test_client()
    response = client.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "name": "fine"}, {"eClass": "Sample", "name": "conflicted"}]},
        headers=ADMIN)
    assert_problem(response, 409, "write_conflict")
    assert _samples_named(app, "fine") == 0
