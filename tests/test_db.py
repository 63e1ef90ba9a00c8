"""The database handle: SQLite connection settings, :func:`labapp.db.transaction` and the
callbacks that run after its unit of work.

The pragma tests are about SQLite only; ``transaction()`` behaves the same on both backends.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import event, select, text, update
from sqlalchemy.exc import IntegrityError

from labapp.db import (
    ReadUnitWrote,
    UnitInProgress,
    after_commit,
    after_rollback,
    db,
    end_read,
    own_read,
    side_unit,
    snapshots,
    sqlite_path,
    transaction,
    unit_state,
    units,
)
from labapp.model import Role
from tests.conftest import BACKEND, run_init

sqlite_only = pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite connection settings")
postgresql_only = pytest.mark.skipif(BACKEND != "postgresql",
                                     reason="PostgreSQL's isolation levels")


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
    application = fresh_app(initialised=True)
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


def test_after_commit_runs_once_the_outermost_block_has_committed(
        database: Flask, commits: list[int]) -> None:
    seen: list[tuple[str, list[int], set[str]]] = []

    def note(name: str) -> Callable[[], None]:
        return lambda: seen.append((name, list(commits), committed_roles()))

    with transaction() as session:
        session.add(Role(name="T_ONE", description=""))
        after_commit(note("first"))
        after_rollback(note("never"))
        with transaction():
            after_commit(note("second"))
        assert seen == []

    assert seen == [("first", [1], {"T_ONE"}), ("second", [1], {"T_ONE"})]


def test_after_rollback_runs_once_everything_is_rolled_back(database: Flask,
                                                             commits: list[int]) -> None:
    seen: list[tuple[str, set[str]]] = []
    with pytest.raises(Boom):
        with transaction() as session:
            session.add(Role(name="T_ONE", description=""))
            after_commit(lambda: seen.append(("never", set())))
            with transaction():
                after_rollback(lambda: seen.append(("rolled back", committed_roles())))
            raise Boom

    assert seen == [("rolled back", set())]
    # The next unit of work starts with no callbacks.
    with transaction():
        pass
    assert seen == [("rolled back", set())] and commits == [1]


def test_a_failed_commit_runs_the_rollback_callbacks(database: Flask) -> None:
    seen: list[str] = []
    with transaction() as session:
        session.add(Role(name="T_TAKEN", description=""))
    with pytest.raises(IntegrityError):
        with transaction() as session:
            after_commit(lambda: seen.append("committed"))
            after_rollback(lambda: seen.append("rolled back"))
            session.add(Role(name="T_TAKEN", description=""))

    assert seen == ["rolled back"]


def test_a_callback_may_run_a_unit_of_work_of_its_own(database: Flask) -> None:
    def record() -> None:
        with transaction() as session:
            session.add(Role(name="T_AFTER", description=""))

    with transaction() as session:
        session.add(Role(name="T_FIRST", description=""))
        after_commit(record)

    assert committed_roles() == {"T_FIRST", "T_AFTER"}


def test_a_failing_after_commit_callback_lets_the_others_run_then_raises(
        database: Flask) -> None:
    seen: list[str] = []

    def fail() -> None:
        raise Boom

    with pytest.raises(Boom):
        with transaction() as session:
            session.add(Role(name="T_KEPT", description=""))
            after_commit(fail)
            after_commit(lambda: seen.append("second"))

    assert seen == ["second"]
    assert committed_roles() == {"T_KEPT"}


def test_a_failing_after_rollback_callback_does_not_hide_the_error(
        database: Flask, caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    def fail() -> None:
        raise RuntimeError("cleanup failed")

    with pytest.raises(Boom):
        with transaction():
            after_rollback(fail)
            after_rollback(lambda: seen.append("second"))
            raise Boom

    assert seen == ["second"]
    assert "cleanup failed" in caplog.text


def test_unit_state_lives_as_long_as_the_unit(database: Flask) -> None:
    with transaction():
        first = unit_state("test", list)
        first.append(1)
        with transaction():
            assert unit_state("test", list) is first
    with transaction():
        assert unit_state("test", list) == []


def test_outside_a_unit_of_work_callbacks_are_refused(database: Flask) -> None:
    for register in (after_commit, after_rollback):
        with pytest.raises(RuntimeError, match="transaction"):
            register(lambda: None)
    with pytest.raises(RuntimeError, match="transaction"):
        unit_state("test", list)


def test_in_the_suites_savepoints_the_callbacks_run_too(app: Flask) -> None:
    """The suite runs each test in an outer transaction; a unit of work there "commits" by
    releasing its savepoint, and its callbacks must behave as in production."""
    seen: list[str] = []
    with app.app_context():
        with transaction():
            after_commit(lambda: seen.append("committed"))
        with pytest.raises(Boom):
            with transaction():
                after_rollback(lambda: seen.append("rolled back"))
                raise Boom
    assert seen == ["committed", "rolled back"]


def test_postgresql_connections_never_prepare_statements(app) -> None:
    """Generic plans of prepared statements went stale as tables grew
    (bench/runs/2026-11-21-bulk-create-and-pages.md)."""
    if app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite"):
        pytest.skip("PostgreSQL connection setting")
    with app.app_context():
        with db.engine.connect() as connection:
            assert connection.connection.dbapi_connection.prepare_threshold is None


# ---------------------------------------------------------------- read and write units

@pytest.fixture
def begins(database: Flask) -> Iterator[list[str]]:
    """Every BEGIN statement the engine runs (SQLite: plain or IMMEDIATE)."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.startswith("BEGIN"):
            seen.append(statement)

    event.listen(db.engine, "before_cursor_execute", record)
    yield seen
    event.remove(db.engine, "before_cursor_execute", record)


@sqlite_only
def test_a_read_unit_takes_no_write_lock_and_a_write_unit_does(begins: list[str]) -> None:
    with units(writing=False):
        with transaction() as session:
            assert session.scalars(select(Role.name)).all()
        with transaction(write=True) as session:
            session.add(Role(name="T_WRITTEN", description=""))
    with transaction() as session:  # outside a declared view: CLI, worker, threads
        session.add(Role(name="T_OUTSIDE", description=""))

    assert begins == ["BEGIN", "BEGIN IMMEDIATE", "BEGIN IMMEDIATE"]
    assert committed_roles() == {"T_WRITTEN", "T_OUTSIDE"}


def test_a_read_unit_that_writes_fails_loudly_and_leaves_nothing(database: Flask) -> None:
    with units(writing=False):
        with pytest.raises(ReadUnitWrote, match="Role"):
            with transaction() as session:
                session.add(Role(name="T_SNEAKED", description=""))
                session.flush()
        with pytest.raises(ReadUnitWrote, match="UPDATE"):
            with transaction() as session:
                session.execute(update(Role).where(Role.name == "ADMIN")
                                .values(description="changed"))
        with pytest.raises(ReadUnitWrote, match="cannot join"):
            with transaction(), transaction(write=True):
                pass
        with transaction() as session:  # reading back what was read changes nothing
            role = session.get(Role, "ADMIN")
            assert role is not None
            role.description = role.description
    assert committed_roles() == set()
    assert db.session.get(Role, "ADMIN").description != "changed"


@sqlite_only
def test_read_units_off_makes_every_unit_write(fresh_app: Callable[..., Flask]) -> None:
    application = fresh_app(READ_UNITS=False)
    run_init(application)
    seen: list[str] = []
    with application.app_context():
        event.listen(db.engine, "before_cursor_execute",
                     lambda _c, _k, statement, *_a: seen.append(statement))
        with units(writing=False), transaction() as session:
            session.add(Role(name="T_BEFORE_ISSUE_20", description=""))
        db.session.remove()
    assert [statement for statement in seen if statement.startswith("BEGIN")] == [
        "BEGIN IMMEDIATE"]


# ---------------------------------------------------------------- reads of their own

def test_a_read_of_its_own_reads_then_gives_its_connection_back(database: Flask) -> None:
    with own_read() as session:
        assert "ADMIN" in session.scalars(select(Role.name)).all()
        assert db.engine.pool.checkedout() == 1
    assert not db.session().in_transaction()
    assert db.engine.pool.checkedout() == 0


def test_a_read_of_its_own_is_refused_inside_a_unit_and_the_units_writes_stay(
        database: Flask) -> None:
    with transaction() as session:
        session.add(Role(name="T_KEPT", description=""))
        session.flush()
        with pytest.raises(UnitInProgress):
            with own_read():
                pass
        with pytest.raises(UnitInProgress):
            end_read()
        assert session.get(Role, "T_KEPT") is not None
    assert committed_roles() == {"T_KEPT"}


def test_a_read_of_its_own_refuses_changes_made_outside_a_unit(database: Flask) -> None:
    db.session.add(Role(name="T_STRAY", description=""))
    with pytest.raises(UnitInProgress, match="outside any unit"):
        with own_read():
            pass
    assert db.session.new  # not dropped: the caller still has it to commit or discard
    db.session.expunge_all()


def test_a_read_of_its_own_is_a_read_unit(database: Flask) -> None:
    with pytest.raises(ReadUnitWrote):
        with own_read() as session:
            session.execute(update(Role).where(Role.name == "ADMIN").values(description="x"))
    assert db.session.get(Role, "ADMIN").description != "x"
    with transaction() as session:  # the session is usable afterwards
        session.add(Role(name="T_AFTER", description=""))
    assert committed_roles() == {"T_AFTER"}


def test_end_read_ends_a_snapshot_left_outside_units(database: Flask) -> None:
    assert db.session.scalars(select(Role.name)).all()
    assert db.session().in_transaction()
    end_read()
    assert not db.session().in_transaction()
    assert db.engine.pool.checkedout() == 0


def test_a_side_unit_commits_beside_the_session_and_leaves_its_transaction(
        database: Flask) -> None:
    assert db.session.scalars(select(Role.name)).all()  # the main session reads
    with side_unit() as session:
        assert session is not db.session()
        session.add(Role(name="T_SIDE", description=""))
    assert db.session().in_transaction()
    assert committed_roles() == {"T_SIDE"}
    with pytest.raises(Boom):
        with side_unit() as session:
            session.add(Role(name="T_SIDE_FAILED", description=""))
            session.flush()
            raise Boom
    assert committed_roles() == {"T_SIDE"}
    end_read()


def test_a_side_unit_is_refused_inside_a_read_unit(database: Flask) -> None:
    with units(writing=False), transaction():
        with pytest.raises(ReadUnitWrote):
            with side_unit():
                pass


# ---------------------------------------------------------------- snapshots on PostgreSQL

def _isolation(session: Any) -> str:
    return str(session.scalar(text("SHOW transaction_isolation")))


@postgresql_only
def test_read_units_read_one_snapshot_and_writes_do_not(database: Flask) -> None:
    """A read unit, a read of its own and a reading request before its view are REPEATABLE
    READ; a write unit, a side unit and a connection of the engine's own stay READ COMMITTED
    (a write there waits for a concurrent update instead of failing on it), and a write unit
    begun inside a reading request ends its snapshot first."""
    with units(writing=False), transaction() as session:
        assert _isolation(session) == "repeatable read"
    with transaction() as session:
        assert _isolation(session) == "read committed"
    with own_read() as session:
        assert _isolation(session) == "repeatable read"
    with snapshots(reading=True):
        assert _isolation(db.session) == "repeatable read"  # authentication's statement
        with transaction() as session:  # its bookkeeping (a PAT's last use)
            assert _isolation(session) == "read committed"
        with side_unit() as session:
            assert _isolation(session) == "read committed"
        with db.engine.begin() as connection:  # the file store's collector
            assert _isolation(connection) == "read committed"
        with units(writing=False), transaction() as session:  # then the view
            assert _isolation(session) == "repeatable read"
    end_read()


@postgresql_only
def test_a_read_unit_does_not_see_a_commit_made_while_it_reads(database: Flask) -> None:
    with units(writing=False), transaction() as session:
        before = set(session.scalars(select(Role.name)))
        with db.engine.connect() as other:
            other.execute(text("INSERT INTO role (name, description) VALUES ('T_MEANWHILE', '')"))
            other.commit()
        assert set(session.scalars(select(Role.name))) == before
    with units(writing=False), transaction() as session:
        assert "T_MEANWHILE" in set(session.scalars(select(Role.name)))
