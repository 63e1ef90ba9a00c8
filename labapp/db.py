"""The database handle, the naming convention and :func:`transaction`, the one place that
commits."""
from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from flask import Flask
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import MetaData, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import DeclarativeBase, Session

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Declarative base of every model; carries the constraint naming convention."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


db = SQLAlchemy(model_class=Base, session_options={"expire_on_commit": False})

_UNIT = "labapp.unit_of_work"
_WRITE_OPTION = "labapp_write"

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class _UnitOfWork:
    """What runs once the outermost :func:`transaction` block has ended, and the objects
    that live as long as it does."""

    after_commit: list[Callable[[], None]] = field(default_factory=list)
    after_rollback: list[Callable[[], None]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)


@contextmanager
def transaction() -> Iterator[Session]:
    """Run a unit of work: commit once when the block succeeds, roll back on any exception.

    Nested uses join the outermost block, so a service called from another service never
    commits half of a larger change. Callbacks registered with :func:`after_commit` and
    :func:`after_rollback` run once the outermost block has ended, outside it (a callback may
    open a unit of work of its own). In the test suite, where the session works in savepoints
    of an outer transaction, "commit" is the release of the block's savepoint.
    """
    session = db.session()
    if _UNIT in session.info:
        yield session
        return
    unit = session.info[_UNIT] = _UnitOfWork()
    try:
        _begin_for_writing(session)
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        del session.info[_UNIT]
        _run_after_rollback(unit.after_rollback)
        raise
    del session.info[_UNIT]
    _run_after_commit(unit.after_commit)


def _current_unit() -> _UnitOfWork:
    unit = db.session().info.get(_UNIT)
    if unit is None:
        raise RuntimeError("not inside labapp.db.transaction()")
    return unit


def after_commit(callback: Callable[[], None]) -> None:
    """Run ``callback`` after the current unit of work has committed (never if it rolls
    back). Callbacks run in the order they were registered; all of them run, and the first
    exception one raises is raised after the last (the commit stands). RuntimeError outside
    :func:`transaction`."""
    _current_unit().after_commit.append(callback)


def after_rollback(callback: Callable[[], None]) -> None:
    """Run ``callback`` after the current unit of work has rolled back (never if it commits).
    All run, in order; an exception one raises is logged, so the caller still sees the error
    that caused the rollback. RuntimeError outside :func:`transaction`."""
    _current_unit().after_rollback.append(callback)


def unit_state(key: str, make: Callable[[], T]) -> T:
    """The object stored under ``key`` for the current unit of work, made by ``make`` on
    first use (say, what its after-commit callback is to do); it is forgotten when the unit
    ends. RuntimeError outside :func:`transaction`."""
    state = _current_unit().state
    if key not in state:
        state[key] = make()
    return state[key]


def _run_after_commit(callbacks: list[Callable[[], None]]) -> None:
    failure: Exception | None = None
    for callback in callbacks:
        try:
            callback()
        except Exception as error:  # re-raised below, once the others have run
            failure = failure or error
    if failure is not None:
        raise failure


def _run_after_rollback(callbacks: list[Callable[[], None]]) -> None:
    for callback in callbacks:
        try:
            callback()
        except Exception:
            logger.exception("after-rollback callback %r failed", callback)


def _begin_for_writing(session: Session) -> None:
    """On SQLite, start the unit of work with ``BEGIN IMMEDIATE``.

    A deferred transaction that has read and then writes must upgrade its lock; in WAL mode
    that fails at once (``SQLITE_BUSY_SNAPSHOT``) when another writer committed meanwhile,
    instead of waiting the busy timeout. Taking the write lock first makes writers queue.
    A read transaction left open by earlier work of the request (authentication) is ended
    first; it holds no changes. Sessions bound to a connection (tests) are left alone.
    """
    bind = session.get_bind()
    if not isinstance(bind, Engine) or bind.dialect.name != "sqlite":
        return
    if session.in_transaction():
        session.rollback()
    session.connection(execution_options={_WRITE_OPTION: True})


def sqlite_path(url: str) -> Path | None:
    """Return the file of an SQLite URL, or None for other databases and in-memory SQLite."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def create_sqlite_file(path: Path) -> None:
    """Create an empty SQLite database in WAL mode; WAL is a property of the file, set once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
    finally:
        connection.close()


def configure_engine(app: Flask, engine: Engine) -> None:
    """Attach per-connection settings to the engine of ``app``.

    SQLite: a busy timeout and ``synchronous=NORMAL`` on every connection, foreign keys on,
    and transactions begun by SQLAlchemy (not by the driver) so that savepoints and
    transactional DDL behave as on PostgreSQL.

    PostgreSQL: no automatic server-side prepared statements. psycopg prepares a query on
    its fifth run, and PostgreSQL may then keep a generic plan chosen while a table was
    small: ``id IN (...)`` lookups became full scans as the data grew (bench/RESULTS.md).
    Planning each statement with its values costs little next to that.
    """
    if engine.dialect.name == "postgresql":
        @event.listens_for(engine, "connect")
        def _on_pg_connect(dbapi_connection, _record) -> None:
            dbapi_connection.prepare_threshold = None
        return
    if engine.dialect.name != "sqlite":
        return
    busy_timeout = app.config["LABAPP"]["SQLITE_BUSY_TIMEOUT_MS"]

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout)}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:
        immediate = connection.get_execution_options().get(_WRITE_OPTION)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
