"""SQLite planner statistics: gathered once the database holds real data, again when it grew
by more than the drift, never on a nearly empty database; PostgreSQL keeps its own."""
from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import delete, func, insert, select

from labapp import sqlite_stats
from labapp.db import db, transaction
from labapp.model import Entity, SearchQueue
from tests.conftest import BACKEND, run_init
from tests.helpers.processes import wait_for, worker_process

FROM = 10  # the threshold for these tests, instead of 1,000 entities


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_stats, "ANALYZE_FROM", FROM)


def add_entities(app: Flask, start: int, count: int) -> None:
    """``count`` entities through Core (their search-queue rows dropped: not searched here)."""
    now = datetime.now(UTC)
    with app.app_context(), transaction() as session:
        session.execute(insert(Entity.__table__), [
            {"id": f"PLAN-{number}", "eclass": "Sample", "name": f"planned {number}",
             "status": "Initial", "type": "Other", "attributes": {}, "created_by": "admin",
             "created_utc": now, "modified_by": "admin", "modified_utc": now, "version": 1}
            for number in range(start, start + count)])
        session.execute(delete(SearchQueue))


def in_app(app: Flask, read: Callable[[], Any]) -> Any:
    """``read()`` in an application context of ``app``, its session closed afterwards."""
    with app.app_context():
        try:
            return read()
        finally:
            db.session.remove()


def entities(app: Flask) -> int:
    return in_app(app, lambda: db.session.scalar(select(func.count()).select_from(Entity)))


def recorded(app: Flask) -> int | None:
    return in_app(app, sqlite_stats._recorded_entities)


def refreshed(app: Flask) -> bool:
    return in_app(app, sqlite_stats.refresh)


@pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite's statistics")
def test_statistics_follow_the_data_on_sqlite(fresh_app: Callable[..., Flask],
                                              small_threshold: None) -> None:
    application = fresh_app()
    run_init(application)
    assert not refreshed(application)  # nearly empty: no statistics that would mislead
    assert recorded(application) is None

    add_entities(application, 0, FROM)
    assert refreshed(application)
    analysed = recorded(application)
    assert analysed == entities(application) >= FROM
    assert not refreshed(application)  # up to date

    add_entities(application, FROM, int(analysed * sqlite_stats.DRIFT))  # within the drift
    assert not refreshed(application)
    add_entities(application, 2 * FROM, 1)
    assert refreshed(application)
    assert recorded(application) == entities(application) > analysed


@pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite's statistics")
def test_init_gathers_them_after_an_import(fresh_app: Callable[..., Flask],
                                           small_threshold: None) -> None:
    application = fresh_app()
    assert "planner statistics" not in run_init(application)
    add_entities(application, 0, FROM)
    assert "gathered the planner statistics" in run_init(application)
    assert "planner statistics" not in run_init(application)


@pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite's statistics")
def test_the_worker_gathers_them_at_its_start(fresh_app: Callable[..., Flask]) -> None:
    application = fresh_app()
    run_init(application)
    add_entities(application, 0, sqlite_stats.ANALYZE_FROM)  # the real threshold: another process
    with worker_process(application):
        wait_for(lambda: recorded(application), "the worker to gather the statistics")
    assert recorded(application) == entities(application)


@pytest.mark.skipif(BACKEND != "postgresql", reason="PostgreSQL's autovacuum analyses")
def test_postgresql_is_left_to_autovacuum(fresh_app: Callable[..., Flask],
                                          small_threshold: None) -> None:
    application = fresh_app()
    run_init(application)
    add_entities(application, 0, FROM)
    assert not refreshed(application)
