"""The database handle: SQLite connection settings and :func:`labapp.db.transaction`.

The pragma tests are about SQLite only; ``transaction()`` behaves the same on both backends.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator

import pytest
from flask import Flask
from sqlalchemy import event, select, text

from labapp.db import db, sqlite_path, transaction
from labapp.model import Role
from tests.conftest import BACKEND, run_init

sqlite_only = pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite connection settings")


class Boom(Exception):
    """Raised inside a transaction to make it fail."""


@sqlite_only
def test_new_database_file_is_in_wal_mode(fresh_app: Callable[..., Flask]) -> None:
    application = fresh_app()
    path = sqlite_path(application.config["SQLALCHEMY_DATABASE_URI"])
    assert path is not None and path.exists()

    connection = sqlite3.connect(path)
    try:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        connection.close()


@sqlite_only
def test_every_connection_gets_timeout_foreign_keys_and_synchronous(
        fresh_app: Callable[..., Flask]) -> None:
    application = fresh_app(SQLITE_BUSY_TIMEOUT_MS=1234)
    with application.app_context():
        # Two connections open at once are two distinct DB-API connections from the pool.
        with db.engine.connect() as first, db.engine.connect() as second:
            assert first.connection.dbapi_connection is not second.connection.dbapi_connection
            for connection in (first, second):
                assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 1234
                assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
                assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
                assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


@pytest.fixture
def database(fresh_app: Callable[..., Flask]) -> Iterator[Flask]:
    """An initialised application with its app context pushed (its real, committing session)."""
    application = fresh_app()
    run_init(application)
    with application.app_context():
        yield application


@pytest.fixture
def commits(database: Flask) -> list[int]:
    """One entry per COMMIT the session issues."""
    seen: list[int] = []
    event.listen(db.session(), "after_commit", lambda _session: seen.append(1))
    return seen


def committed_roles() -> set[str]:
    """Test roles as another connection sees them (only what was really committed)."""
    with db.engine.connect() as connection:
        return set(connection.scalars(text("SELECT name FROM role WHERE name LIKE 'T\\_%' "
                                           "ESCAPE '\\'")))


def test_success_commits_once(database: Flask, commits: list[int]) -> None:
    with transaction() as session:
        session.add(Role(name="T_ONE", description=""))
        session.flush()
        assert committed_roles() == set()

    assert commits == [1]
    assert committed_roles() == {"T_ONE"}


def test_exception_rolls_everything_back(database: Flask, commits: list[int]) -> None:
    with pytest.raises(Boom):
        with transaction() as session:
            session.add(Role(name="T_ONE", description=""))
            session.flush()
            session.add(Role(name="T_TWO", description=""))
            raise Boom

    assert commits == []
    assert committed_roles() == set()
    assert db.session.scalars(select(Role.name).where(Role.name.like("T%"))).all() == []
    # The session is usable afterwards.
    with transaction() as session:
        session.add(Role(name="T_AFTER", description=""))
    assert committed_roles() == {"T_AFTER"}


def test_nested_block_joins_the_outer_one(database: Flask, commits: list[int]) -> None:
    with transaction() as outer:
        outer.add(Role(name="T_OUTER", description=""))
        with transaction() as inner:
            assert inner is outer
            inner.add(Role(name="T_INNER", description=""))
        assert commits == []  # leaving the inner block did not commit
        assert committed_roles() == set()

    assert commits == [1]
    assert committed_roles() == {"T_OUTER", "T_INNER"}


def test_exception_in_nested_block_rolls_back_the_outer_work(
        database: Flask, commits: list[int]) -> None:
    with pytest.raises(Boom):
        with transaction() as outer:
            outer.add(Role(name="T_OUTER", description=""))
            outer.flush()
            with transaction() as inner:
                inner.add(Role(name="T_INNER", description=""))
                raise Boom

    assert commits == []
    assert committed_roles() == set()


def test_postgresql_connections_never_prepare_statements(app) -> None:
    """Generic plans of prepared statements went stale as tables grew (bench/RESULTS.md)."""
    if app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite"):
        pytest.skip("PostgreSQL connection setting")
    with app.app_context():
        with db.engine.connect() as connection:
            assert connection.connection.dbapi_connection.prepare_threshold is None
