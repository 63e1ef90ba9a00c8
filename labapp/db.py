"""The database handle, the naming convention and :func:`transaction`, the one place that
commits."""
from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from flask import Flask, current_app
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import Executable, MetaData, Table, event
from sqlalchemy.engine import Connection, CursorResult, Engine, make_url
from sqlalchemy.orm import DeclarativeBase, ORMExecuteState, Session

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

if TYPE_CHECKING:
    # db.Model is built at run time from Base (plus Flask-SQLAlchemy's table-name and query
    # mixins), which a type checker cannot follow; to it the models derive from Base.
    Model = Base
else:
    Model = db.Model


def table_of(model: type[Base]) -> Table:
    """The table a model is declared on (every model here has exactly one)."""
    table = model.__table__
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not mapped to one table")
    return table


def rows_matched(statement: Executable) -> int:
    """Run an UPDATE or DELETE in the current session and return how many rows it matched.

    Raises TypeError if the statement returned rows instead (a SELECT)."""
    result = db.session.execute(statement)
    if not isinstance(result, CursorResult):
        raise TypeError(f"not an UPDATE or DELETE: {statement}")
    return result.rowcount

_UNIT = "labapp.unit_of_work"
_WRITE_OPTION = "labapp_write"
# Whether an outermost transaction() begun now is a write unit: true unless a request
# handler declared its view as reading (see :func:`units`).
_WRITING: ContextVar[bool] = ContextVar("labapp.db.writing", default=True)
# Whether a session's transaction begun now on PostgreSQL reads one snapshot (REPEATABLE
# READ): inside read units, and before the view of a route that reads (see :func:`snapshots`).
# Connections taken from the engine directly (the file store's collector) never do.
_SNAPSHOT: ContextVar[bool] = ContextVar("labapp.db.snapshot", default=False)
# Marks a pooled connection whose level :func:`_begin_snapshot` set, behind SQLAlchemy's back.
_SNAPSHOT_SET = "labapp_snapshot_set"

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class _UnitOfWork:
    """What runs once the outermost :func:`transaction` block has ended, and the objects
    that live as long as it does."""

    after_commit: list[Callable[[], None]] = field(default_factory=list)
    after_rollback: list[Callable[[], None]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    reading: bool = False


class ReadUnitWrote(RuntimeError):
    """A read unit of work tried to write: its route must be declared as writing
    (``labapp.web.units.writes``), or the write done in a write unit of its own."""


@contextmanager
def units(*, writing: bool) -> Iterator[None]:
    """Within the block, every outermost :func:`transaction` is a write unit (``writing``)
    or a read unit (not ``writing``).

    The request handler runs each view in the units its route declares
    (:mod:`labapp.web.units`); everywhere else (CLI, worker, threads, what runs around a view)
    units write.
    """
    token = _WRITING.set(writing)
    try:
        yield
    finally:
        _WRITING.reset(token)


@contextmanager
def snapshots(*, reading: bool) -> Iterator[None]:
    """Within the block, a transaction the session begins outside units of work reads one
    snapshot on PostgreSQL (``reading``) or not.

    The request handler begins a reading route's request so, before authentication's
    statement: the actor and everything the view reads then come from one snapshot, and
    the view's read unit goes on in that transaction (no second ``BEGIN``). A write unit
    begun meanwhile (authentication's bookkeeping) ends that snapshot first and writes in
    an ordinary transaction; the view's read unit then begins a snapshot of its own."""
    token = _SNAPSHOT.set(reading)
    try:
        yield
    finally:
        _SNAPSHOT.reset(token)


@contextmanager
def transaction(*, write: bool = False) -> Iterator[Session]:
    """Run a unit of work: commit once when the block succeeds, roll back on any exception.

    Nested uses join the outermost block, so a service called from another service never
    commits half of a larger change. Callbacks registered with :func:`after_commit` and
    :func:`after_rollback` run once the outermost block has ended, outside it (a callback may
    open a unit of work of its own). In the test suite, where the session works in savepoints
    of an outer transaction, "commit" is the release of the block's savepoint.

    A write unit takes SQLite's write lock first (``BEGIN IMMEDIATE``). A read unit (inside a
    view declared as reading, see :func:`units`) takes no lock (``BEGIN``) and reads one
    snapshot: SQLite's, PostgreSQL's REPEATABLE READ (a write unit there stays READ
    COMMITTED, docs/decisions/read-and-write-units.md); any write in it raises
    :class:`ReadUnitWrote`.
    ``write`` makes this block a write unit whatever the route declared (the rare write of a
    page that reads, such as the starter dashboard of a first visit); it raises
    :class:`ReadUnitWrote` inside a read unit.
    The setting ``READ_UNITS = false`` makes every unit write, as before issue 20.
    """
    session = db.session()
    if _UNIT in session.info:
        if write and session.info[_UNIT].reading:
            raise ReadUnitWrote("a write unit cannot join the read unit in progress")
        yield session
        return
    reading = not (write or _WRITING.get()) and current_app.config["LABAPP"]["READ_UNITS"]
    in_snapshot = _SNAPSHOT.get()
    unit = session.info[_UNIT] = _UnitOfWork(reading=reading)
    try:
        with snapshots(reading=reading):
            if not reading:
                _begin_for_writing(session, end_snapshot=in_snapshot)
            yield session
            session.commit()
    except BaseException:
        session.rollback()
        del session.info[_UNIT]
        _run_after_rollback(unit.after_rollback)
        raise
    del session.info[_UNIT]
    _run_after_commit(unit.after_commit)


class UnitInProgress(RuntimeError):
    """A read of its own was asked for inside a unit of work: ending it would drop the
    unit's writes. Read in the caller's unit instead."""


def in_unit() -> bool:
    """Whether a unit of work is in progress in the current session."""
    return _UNIT in db.session().info


def _outside_units(session: Session, what: str) -> None:
    if _UNIT in session.info:
        raise UnitInProgress(f"{what} inside a unit of work would drop its writes")
    if session.new or session.dirty or session.deleted:
        raise UnitInProgress(f"{what} would drop changes made outside any unit of work")


def end_read() -> None:
    """End the transaction the session holds outside any unit of work (a read's snapshot;
    on PostgreSQL also one an error aborted) and give its connection back to the pool.

    Raises :class:`UnitInProgress` inside a unit of work, or when the session holds changes
    made outside one: ending it would drop them."""
    session = db.session()
    _outside_units(session, "ending a read")
    session.rollback()


@contextmanager
def own_read() -> Iterator[Session]:
    """A read of its own, for code that runs outside units of work (the worker, the CLI,
    what runs around a view): a read unit begun on a fresh snapshot and ended at once,
    which gives its connection back and holds no lock once the block ends (an idle worker
    that looks for work takes no write lock). Any write in it raises
    :class:`ReadUnitWrote`, as in every read unit.

    Raises :class:`UnitInProgress` inside a unit of work, so no helper can silently drop
    its caller's writes: inside one, read in the caller's unit."""
    session = db.session()
    _outside_units(session, "a read of its own")
    session.rollback()  # a snapshot left by an earlier read is not this read's
    unit = session.info[_UNIT] = _UnitOfWork(reading=True)
    try:
        with snapshots(reading=True):
            yield session
    finally:
        session.rollback()
        del session.info[_UNIT]
        _run_after_rollback(unit.after_rollback)


@contextmanager
def side_unit() -> Iterator[Session]:
    """A write unit in a session of its own, beside the current session's transaction,
    which it neither joins nor ends: committed when the block succeeds, rolled back on any
    exception. For the progress a long job records while its main session reads in one
    snapshot (an import's plan). Raises :class:`ReadUnitWrote` inside a read unit."""
    if _reading(db.session()):
        raise ReadUnitWrote("a side unit writes; the unit in progress reads")
    session = db.session.session_factory()
    try:
        with snapshots(reading=False):
            _begin_for_writing(session)
            yield session
            session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def _current_unit() -> _UnitOfWork:
    unit = db.session().info.get(_UNIT)
    if not isinstance(unit, _UnitOfWork):
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
    value: T = state[key]
    return value


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


def _begin_for_writing(session: Session, *, end_snapshot: bool = False) -> None:
    """On SQLite, start the unit of work with ``BEGIN IMMEDIATE``; on PostgreSQL, in an
    ordinary (READ COMMITTED) transaction.

    A deferred transaction that has read and then writes must upgrade its lock; in WAL mode
    that fails at once (``SQLITE_BUSY_SNAPSHOT``) when another writer committed meanwhile,
    instead of waiting the busy timeout. Taking the write lock first makes writers queue.
    A read transaction left open by earlier work of the request (authentication) is ended
    first; it holds no changes. On PostgreSQL that is done only for a snapshot
    (``end_snapshot``: begun under :func:`snapshots`), where a write could fail on a
    concurrent update instead of waiting for it. Sessions bound to a connection (tests) are
    left alone.
    """
    bind = session.get_bind()
    if not isinstance(bind, Engine):
        return
    if bind.dialect.name != "sqlite":
        if end_snapshot and session.in_transaction():
            session.rollback()
        return
    if session.in_transaction():
        session.rollback()
    session.connection(execution_options={_WRITE_OPTION: True})


def _reading(session: Session) -> bool:
    unit = session.info.get(_UNIT)
    return unit is not None and unit.reading


def _refuse_flush(session: Session, _context: Any, _instances: Any) -> None:
    """``before_flush``: a read unit never writes (an upgraded SQLite lock would fail or
    queue behind writers; an undeclared write would go unnoticed)."""
    if _reading(session) and (session.new or session.deleted or any(
            session.is_modified(instance) for instance in session.dirty)):
        changed = [type(item).__name__ for item in (*session.new, *session.dirty,
                                                    *session.deleted)]
        raise ReadUnitWrote(f"a read unit tried to write {', '.join(sorted(set(changed)))}")


def _refuse_statement(state: ORMExecuteState) -> None:
    """``do_orm_execute``: the same for INSERT, UPDATE and DELETE statements."""
    if (state.is_insert or state.is_update or state.is_delete) and _reading(state.session):
        raise ReadUnitWrote(f"a read unit tried to run {state.statement}")


def _begin_snapshot(session: Session, _transaction: Any, connection: Connection) -> None:
    """``after_begin``: a session's transaction begun under :func:`snapshots` reads one
    snapshot on PostgreSQL (REPEATABLE READ), unless its connection chose a level of its own.
    psycopg sends the level with the ``BEGIN`` of the first statement: no round trip.
    Sessions bound to a connection in a transaction already (the suite's) are left alone."""
    if (not _SNAPSHOT.get() or connection.dialect.name != "postgresql"
            or isinstance(session.bind, Connection)
            or "isolation_level" in connection.get_execution_options()):
        return
    driver: Any = connection.connection.dbapi_connection
    connection.dialect.set_isolation_level(driver, "REPEATABLE READ")
    connection.info[_SNAPSHOT_SET] = True  # for the pool to reset (configure_engine)


def guard_read_units() -> None:
    """Make every session refuse writes inside a read unit, and begin its snapshot on
    PostgreSQL (idempotent; called by :func:`configure_engine`)."""
    if not event.contains(Session, "before_flush", _refuse_flush):
        event.listen(Session, "before_flush", _refuse_flush)
        event.listen(Session, "do_orm_execute", _refuse_statement)
        event.listen(Session, "after_begin", _begin_snapshot)


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
    small: ``id IN (...)`` lookups became full scans as the data grew
    (bench/runs/2026-11-21-bulk-create-and-pages.md). Planning each statement with its values
    costs little next to that.

    PostgreSQL: a session's transaction begun under :func:`snapshots` is REPEATABLE READ
    (:func:`_begin_snapshot`); its connection goes back to the pool at the server's default
    level, READ COMMITTED, which every other transaction keeps.

    Both: sessions refuse writes in read units and begin their snapshots
    (:func:`guard_read_units`).
    """
    guard_read_units()
    if engine.dialect.name == "postgresql":
        @event.listens_for(engine, "connect")
        def _on_pg_connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.prepare_threshold = None

        @event.listens_for(engine, "checkin")
        def _on_pg_checkin(dbapi_connection: Any, record: Any) -> None:
            if record.info.pop(_SNAPSHOT_SET, False) and dbapi_connection is not None:
                engine.dialect.reset_isolation_level(dbapi_connection)
        return
    if engine.dialect.name != "sqlite":
        return
    busy_timeout = app.config["LABAPP"]["SQLITE_BUSY_TIMEOUT_MS"]

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout)}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        immediate = connection.get_execution_options().get(_WRITE_OPTION)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
