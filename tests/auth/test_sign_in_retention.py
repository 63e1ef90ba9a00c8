"""The sign-in log keeps an attempt ``SIGN_IN_LOG_RETENTION_DAYS`` (365): the worker removes
older ones, oldest first, a chunk per write unit; 0 keeps them all. The Sign-ins page says
how long attempts are kept."""
from __future__ import annotations

import secrets
from collections.abc import Iterator
from datetime import timedelta

import pytest
from flask import Flask
from sqlalchemy import select

from labapp.auth import sign_in_log
from labapp.db import db, transaction
from labapp.model import SignInEvent
from labapp.model.types import utc_now
from tests.conftest import ADMIN_PASSWORD, csrf_of

AGES = (700, 500, 400, 366, 364, 10, 0)  # days


@pytest.fixture
def aged_events(app: Flask) -> Iterator[tuple[str, dict[int, int]]]:
    """A username of this test's own, with an attempt of each age in ``AGES`` (age → id)."""
    username = f"aged-{secrets.token_hex(4)}"
    now = utc_now()
    with app.app_context():
        with transaction():
            events = {age: SignInEvent(at_utc=now - timedelta(days=age), username=username,
                                       user_id=None, method="password", provider=None,
                                       address="192.0.2.1", succeeded=False,
                                       reason="wrong_password") for age in AGES}
            db.session.add_all(events.values())
            db.session.flush()
            ids = {age: event.id for age, event in events.items()}
        db.session.remove()
    yield username, ids
    with app.app_context():
        with transaction():
            db.session.execute(SignInEvent.__table__.delete().where(
                SignInEvent.username == username))
        db.session.remove()


def ages_left(app: Flask, username: str, ids: dict[int, int]) -> list[int]:
    with app.app_context():
        try:
            kept = set(db.session.scalars(select(SignInEvent.id)
                                          .where(SignInEvent.username == username)))
        finally:
            db.session.remove()
    return [age for age, event_id in ids.items() if event_id in kept]


def test_events_past_the_retention_go_oldest_first_a_chunk_at_a_time(
        app: Flask, aged_events: tuple[str, dict[int, int]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    username, ids = aged_events
    monkeypatch.setattr(sign_in_log, "CHUNK", 2)
    with app.app_context():
        try:
            removed = [sign_in_log.remove_expired(365) for _ in range(3)]
        finally:
            db.session.remove()
    assert removed == [2, 2, 0]
    assert ages_left(app, username, ids) == [364, 10, 0]


def test_the_worker_job_follows_the_setting(
        app: Flask, aged_events: tuple[str, dict[int, int]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    username, ids = aged_events
    settings = app.config["LABAPP"]
    assert settings["SIGN_IN_LOG_RETENTION_DAYS"] == 365
    with app.app_context():
        try:
            monkeypatch.setitem(settings, "SIGN_IN_LOG_RETENTION_DAYS", 0)
            assert sign_in_log.upkeep() is False  # 0 keeps every attempt
            assert ages_left(app, username, ids) == list(AGES)
            monkeypatch.setitem(settings, "SIGN_IN_LOG_RETENTION_DAYS", 30)
            assert sign_in_log.upkeep() is True
            assert sign_in_log.upkeep() is False
        finally:
            db.session.remove()
    assert ages_left(app, username, ids) == [10, 0]


def test_the_sign_ins_page_says_how_long_attempts_are_kept(
        app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    admin = app.test_client()
    admin.get("/login")
    admin.post("/login", data={"username": "admin", "password": ADMIN_PASSWORD,
                               "csrf_token": csrf_of(admin)})
    assert "Attempts are kept 365 days." in admin.get("/admin/sign-ins").get_data(as_text=True)
    monkeypatch.setitem(app.config["LABAPP"], "SIGN_IN_LOG_RETENTION_DAYS", 0)
    assert "Every attempt is kept." in admin.get("/admin/sign-ins").get_data(as_text=True)
