"""Feeding the index: the queue is drained after every commit that wrote, and at start-up.

Triggers (migration ``search_queue``) add a ``search_queue`` row in the transaction of every
change to an entity, note or file, so the queue holds every committed change that the index
may not have yet. :func:`drain` rewrites the queued entities' documents in batches of up to
:data:`BATCH` (one Whoosh commit each) and deletes the rows it has indexed only after that
commit: a worker killed in between leaves the rows, and the next drain (any worker's next
write, or the next start) indexes them again. Reading the queue and the entities happens
while the index's write lock is held, so two workers never commit documents out of order.

Where the drain runs: a separate indexer process (``flask --app labapp search worker``,
:mod:`labapp.search.upkeep`) drains the queue as it fills and refreshes a heartbeat file
next to the index; while that heartbeat is fresh a request only writes its queue rows (in
its own transaction, by the triggers) and leaves the indexing to the worker. Without a live
worker (the test client, a bare ``flask run``, a worker that died) the request drains inline
after its commit, as before.

All of this is for a backend fed after the commit (Whoosh). One that writes in transactions
(``in_transaction``: PostgreSQL) gets the queue rows a unit of work added indexed and
dropped just before that unit commits (:func:`index_queued`), in the same transaction: the
change and its document commit or roll back together, and the queue stays empty (a row
left by a write outside any unit of work is picked up by the next drain). The plain inserts
of a bulk create are not even queued: their documents are made from the inserted values
(:mod:`labapp.search.inserted`, :func:`inserted_documents`).
"""
from __future__ import annotations

import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from flask import Flask, current_app, request
from sqlalchemy import (
    ARRAY,
    ColumnElement,
    Integer,
    Result,
    String,
    any_,
    bindparam,
    delete,
    event,
    func,
    select,
)
from sqlalchemy.orm import ORMExecuteState, Session

from labapp import advisory
from labapp.access.labels import entity_labels
from labapp.atomic import write_whole
from labapp.db import after_commit, db, in_unit, own_read, transaction, unit_state
from labapp.model import Entity, File, Note, SearchQueue
from labapp.search import backend
from labapp.search.analysis import Document, IndexBusy, IndexUnavailable, text_of
from labapp.search.backend import SearchBackend
from labapp.search.inserted import Inserted, insert_unqueued, rows_of
from labapp.search.inserted import table_of as inserted_table

# Rows per index commit: a small queue (what requests add) is one commit in this process; a
# backlog is indexed 20,000 rows a commit (by worker processes, in the Whoosh backend).
BATCH = 20_000
_DELETE_CHUNK = 5000
_READ_CHUNK = 500
_WAKE = "labapp.search.wake"
HEARTBEAT_EVERY = 0.5  # seconds between the worker's heartbeats
HEARTBEAT_STALE = 3.0  # a heartbeat older than this: no live worker, requests drain inline
logger = logging.getLogger(__name__)
_STARTED = "labapp.search.started"  # app.extensions: the event set once the first drain ran
_IN_TRANSACTION = "labapp.search.in_transaction"  # unit state: changes to index before commit
_INSERTED = "labapp.search.inserted"  # unit state: rows inserted unqueued (.inserted)
# The blueprints whose requests read the index (``SEARCH_DRAIN = before-search``).
_SEARCHING = frozenset({"search_api", "search_views"})
# Tables the indexer itself writes: writing them wakes no drain.
_OWN_TABLES = frozenset({SearchQueue.__tablename__, "search_document"})


class _Once:
    """A flag the first of many threads claims."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._claimed = False

    def claim(self) -> bool:
        """True for the first caller only."""
        with self._lock:
            if self._claimed:
                return False
            self._claimed = True
            return True


def index_path(app: Flask | None = None) -> Path:
    """The Whoosh index folder of the application (the current one by default); the search
    worker's heartbeat lies beside it, whatever the backend."""
    settings = (app or current_app).config["LABAPP"]
    configured = settings.get("SEARCH_INDEX_PATH")
    return Path(configured) if configured else Path(settings["INSTANCE_PATH"]) / "search-index"


def make_backend(app: Flask) -> SearchBackend:
    """The backend ``LABAPP_SEARCH_BACKEND`` names, for ``app``."""
    settings = app.config["LABAPP"]
    if settings["SEARCH_BACKEND"] == "postgresql":
        from labapp.search.postgresql import PostgresBackend

        return PostgresBackend()
    from labapp.search.index import WhooshBackend

    return WhooshBackend(index_path(app), float(settings["SEARCH_WRITER_TIMEOUT"]))


def heartbeat_path() -> Path:
    """The file whose modification time is the indexer worker's last heartbeat."""
    path = index_path()
    return path.with_name(path.name + ".worker")


def beat(path: Path) -> None:
    """Record that the worker is alive (its pid in the file, the time in its mtime)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, str(os.getpid()))


def worker_alive() -> bool:
    """Whether an indexer worker refreshed its heartbeat within :data:`HEARTBEAT_STALE` s;
    on PostgreSQL, whether a worker of any host holds its drain lock (:mod:`.upkeep`)."""
    if advisory.on_postgresql(db.engine):
        return advisory.is_held(db.engine, advisory.SEARCH_DRAIN)
    try:
        return time.time() - heartbeat_path().stat().st_mtime < HEARTBEAT_STALE
    except OSError:
        return False


# ---------------------------------------------------------------- documents

def _attribute_values(attributes: Any) -> Iterator[Any]:
    """The values of ``attributes``, objects walked in the order of their keys (the same
    whether the dict was read from ``jsonb``, which orders keys its own way, or is the one
    a unit inserted)."""
    if isinstance(attributes, dict):
        for key in sorted(attributes):
            yield from _attribute_values(attributes[key])
    elif isinstance(attributes, list):
        for value in attributes:
            yield from _attribute_values(value)
    elif not isinstance(attributes, bool):
        yield attributes


def documents_for(entity_ids: list[str]) -> tuple[list[Document], list[str]]:
    """The documents of the entities ``entity_ids`` as stored now, and the ids that no
    longer exist."""
    documents: list[Document] = []
    for start in range(0, len(entity_ids), _READ_CHUNK):
        documents.extend(_documents(entity_ids[start:start + _READ_CHUNK]))
    found = {document.id for document in documents}
    return documents, [entity_id for entity_id in entity_ids if entity_id not in found]


def among(column: Any, values: list[Any]) -> ColumnElement[bool]:
    """``column IN values``; on PostgreSQL ``column = ANY(:array)``, one parameter whatever
    the number of values: psycopg adapting and sending hundreds of placeholders per
    statement cost more than the statement (an in-transaction write of 500 documents spent
    most of its reading time there)."""
    predicate: ColumnElement[bool]
    if db.engine.dialect.name != "postgresql":
        predicate = column.in_(values)
    else:
        kind = Integer if values and isinstance(values[0], int) else String
        predicate = column == any_(bindparam(None, list(values), type_=ARRAY(kind)))
    return predicate


def _documents(ids: list[str]) -> list[Document]:
    rows = db.session.execute(select(
        Entity.id, Entity.eclass, Entity.name, Entity.description, Entity.barcode,
        Entity.attributes, Entity.department_id, Entity.project_id).where(
        among(Entity.id, ids))).all()
    attached: dict[str, list[str]] = defaultdict(list)
    own_content: dict[str, str] = {}
    wanted = set(ids)
    for note_id, subject_id, content in db.session.execute(
            select(Note.id, Note.subject_id, Note.content).where(
                among(Note.subject_id, ids) | among(Note.id, ids))):
        if content and note_id in wanted:
            own_content[note_id] = content
        if subject_id in wanted and content:
            attached[subject_id].append(content)
    for subject_id, name in db.session.execute(
            select(File.subject_id, File.name).where(
                among(File.subject_id, ids))):
        if subject_id is not None:
            attached[subject_id].append(name)
    return [_document(row._mapping, own_content.get(row.id), attached.get(row.id, ()))
            for row in rows]


def _document(row: Mapping[Any, Any], content: str | None, attached: Iterable[str]) -> Document:
    """The document of the entity whose ``entity`` columns are ``row``, with its own note
    ``content`` and the texts of its notes and file names ``attached`` (in any order: they
    are sorted, as the database returns them in none)."""
    key_text = text_of((row["id"], row["name"], row["barcode"]))
    return Document(
        id=row["id"], eclass=row["eclass"],
        labels=entity_labels(row["eclass"], row["department_id"], row["project_id"]),
        key_text=key_text,
        text=text_of((key_text, row["description"], content,
                      *_attribute_values(row["attributes"]), *sorted(attached))))


def inserted_documents(inserted: Inserted, queued: set[str]) -> tuple[list[Document],
                                                                       list[str]]:
    """The documents of the entities a unit of work inserted unqueued (``inserted``), made
    from the inserted values, and the ids whose documents must be read from the database
    instead: those queued since (``queued``: changed again), the unsure ones, and each
    subject of an inserted attachment that is not itself made here."""
    reread = set(inserted.unsure) | (queued & inserted.entities.keys())
    attached: dict[str, list[str]] = defaultdict(list)
    for attachment_id, subject_id in inserted.attachments.items():
        if subject_id is None:
            continue
        if attachment_id in reread or attachment_id in queued:
            reread.add(subject_id)
            continue
        text = (inserted.contents.get(attachment_id) if attachment_id in inserted.contents
                else _file_name(inserted, attachment_id))
        if text is None and attachment_id not in inserted.contents:
            reread.add(subject_id)  # a file whose entity row this unit did not insert
        elif text:
            attached[subject_id].append(text)
    reread |= attached.keys() - inserted.entities.keys()
    documents = [_document(row, inserted.contents.get(entity_id), attached.get(entity_id, ()))
                 for entity_id, row in inserted.entities.items() if entity_id not in reread]
    return documents, sorted(reread)


def _file_name(inserted: Inserted, file_id: str) -> str | None:
    row = inserted.entities.get(file_id)
    return None if row is None else row["name"]


def all_documents() -> Iterator[Document]:
    """Every entity's document, read from the database in id order, chunk by chunk."""
    last = ""
    while True:
        ids = list(db.session.scalars(select(Entity.id).where(Entity.id > last)
                                      .order_by(Entity.id).limit(_READ_CHUNK)))
        if not ids:
            return
        yield from _documents(ids)
        last = ids[-1]


# ---------------------------------------------------------------- the queue

def queue_length() -> int:
    """Rows waiting in the queue."""
    return db.session.scalar(select(func.count()).select_from(SearchQueue)) or 0


def drain(on_batch: Callable[[], None] | None = None) -> int:
    """Index every queued change, :data:`BATCH` rows per index commit; return how many
    queue rows were indexed (``on_batch`` is called after each commit). Without an index
    (never built, or damaged) nothing is done: the rows wait for
    ``flask --app labapp search rebuild``."""
    search = backend.current()
    if not search.exists():
        return 0
    done = 0
    while True:
        # The batch is read in a transaction begun under the index's lock (SQLite keeps a
        # transaction's first snapshot: one begun before waiting could be older than what
        # the previous lock holder indexed).
        with own_read() as session:
            waiting = session.scalar(select(SearchQueue.id).limit(1))
        if waiting is None:  # nothing queued: no need to wait for the index's lock
            return done
        rows = _drain_batch(search)
        done += len(rows)
        if on_batch is not None:
            on_batch()
        if len(rows) < BATCH:
            return done


def _drain_batch(search: SearchBackend) -> list[Any]:
    """Index up to :data:`BATCH` queued changes in one index commit, then drop their rows
    (a backend that writes in transactions: all in one unit of work)."""
    if search.in_transaction:
        with transaction():
            return index_queued(search, BATCH)
    rows: list[Any] = []

    def read_batch() -> tuple[list[Document], list[str]]:
        with own_read() as session:
            rows.extend(session.execute(select(SearchQueue.id, SearchQueue.entity_id)
                                        .order_by(SearchQueue.id).limit(BATCH)).all())
            return documents_for(list(dict.fromkeys(row.entity_id for row in rows)))

    search.write(read_batch)
    if rows:
        with transaction():
            _drop([row.id for row in rows])
    return rows


def _drop(done: list[int]) -> None:
    """Delete the queue rows ``done`` in the current unit of work."""
    for start in range(0, len(done), _DELETE_CHUNK):
        db.session.execute(delete(SearchQueue).where(
            among(SearchQueue.id, done[start:start + _DELETE_CHUNK])))


def index_queued(search: SearchBackend, limit: int | None = None,
                 inserted: Inserted | None = None) -> list[Any]:
    """In the current unit of work: rewrite the documents of the queued changes it can see
    (its own, and committed ones no other transaction holds; up to ``limit``) and of the
    rows it ``inserted`` unqueued (:mod:`labapp.search.inserted`) through ``search``, and
    drop the queue rows, so they commit together with the change (a backend with
    ``in_transaction``)."""
    statement = select(SearchQueue.id, SearchQueue.entity_id).order_by(SearchQueue.id)
    if limit is not None:
        statement = statement.limit(limit)
    # Rows another unit of work is indexing are skipped (it drops them as it commits); a
    # unit's own rows are never locked against itself.
    rows = list(db.session.execute(statement.with_for_update(skip_locked=True)).all())
    if rows or (inserted is not None and inserted.entities):
        queued = list(dict.fromkeys(row.entity_id for row in rows))

        def produce() -> tuple[list[Document], list[str]]:
            made: list[Document] = []
            read = queued
            if inserted is not None:
                made, reread = inserted_documents(inserted, set(queued))
                read = list(dict.fromkeys([*queued, *reread]))
            documents, gone = documents_for(read)
            return [*made, *documents], gone

        search.write(produce)
        _drop([row.id for row in rows])
    return rows


def _before_commit(session: Session) -> None:
    """Index what the unit of work that is committing queued or inserted unqueued, in it,
    when the backend writes in transactions."""
    if session is not db.session():
        return
    try:
        pending = unit_state(_IN_TRANSACTION, lambda: [False])
    except RuntimeError:  # a commit outside units of work: its rows wait for a drain
        return
    if not pending[0]:
        return
    pending[0] = False
    session.flush()
    index_queued(backend.current(), inserted=unit_state(_INSERTED, Inserted))


def _drain_after_commit() -> None:
    if current_app.config["LABAPP"]["SEARCH_DRAIN"] != "after-commit":
        return  # the next request to start indexes them (see _drain_waiting)
    _drain_unless_worker()


def _drain_unless_worker() -> None:
    if worker_alive():  # the worker indexes the queued rows
        return
    try:
        drain()
    except IndexBusy:
        logger.warning("search index busy; the queued changes wait for the next drain")
    except IndexUnavailable as error:
        logger.error("search index unavailable (%s); the queued changes wait for "
                     "`flask --app labapp search rebuild`", error)


def _writes_in_transaction() -> bool:
    """Whether the current application's backend indexes changes in their transaction (an
    application without a bound backend does not)."""
    bound = current_app.extensions.get(backend.BACKEND)
    return bool(bound is not None and bound.in_transaction)


def _wake(session: Session) -> None:
    """Drain the queue once the current unit of work has committed (once per unit); with a
    backend that writes in transactions, index its changes just before it commits."""
    if session is not db.session():
        return
    try:
        if _writes_in_transaction():
            unit_state(_IN_TRANSACTION, lambda: [False])[0] = True
            return
        scheduled = unit_state(_WAKE, lambda: [False])
    except RuntimeError:  # not in a unit of work: nothing of ours is committing
        return
    if not scheduled[0]:
        scheduled[0] = True
        after_commit(_drain_after_commit)


def _after_flush(session: Session, _context: Any) -> None:
    if any(isinstance(item, Entity)
           for item in (*session.new, *session.dirty, *session.deleted)):
        _wake(session)


def _on_execute(state: ORMExecuteState) -> Result[Any] | None:
    if not (state.is_insert or state.is_update or state.is_delete):
        return None
    table = getattr(state.statement, "table", None)
    # An ORM statement's table is an annotated copy of the Table: compared by name (with
    # ``is``, the drain's own DELETE of its rows woke a nested drain, one per batch).
    if getattr(table, "name", None) in _OWN_TABLES:
        return None  # the indexer's own bookkeeping
    _wake(state.session)
    if state.session is not db.session() or not _writes_in_transaction():
        return None
    inserted_into = inserted_table(state) if state.is_insert else None
    try:
        inserted = unit_state(_INSERTED, Inserted) if inserted_into else None
    except RuntimeError:  # outside units of work: the triggers queue it for a drain
        return None
    if inserted is None or inserted_into is None:
        return None
    result = insert_unqueued(state)
    inserted.keep(inserted_into, rows_of(state))
    return result


def health() -> str | None:
    """None when the full-text index can be searched, else what the operator should do."""
    try:
        backend.current().check()
    except IndexUnavailable as error:
        return f"{error} Run `flask --app labapp search rebuild`."
    return None


def init_app(app: Flask) -> None:
    """Bind the search backend ``LABAPP_SEARCH_BACKEND`` names (:func:`make_backend`),
    wake the indexer after every unit of work that wrote entities (ORM flushes and Core
    statements alike; a backend that writes in transactions indexes them before the
    commit), drain what earlier processes left on this process's first request (with
    ``SEARCH_DRAIN = next-request``, what waits at the start of every request; with
    ``before-search``, at the start of every search request), and report
    the index's state in ``/healthz`` (``app.extensions["labapp.health"]``)."""
    backend.bind(app, make_backend(app))
    app.extensions.setdefault("labapp.health", {})["searchIndex"] = health
    if not event.contains(Session, "after_flush", _after_flush):
        event.listen(Session, "after_flush", _after_flush)
        event.listen(Session, "do_orm_execute", _on_execute)
        event.listen(Session, "before_commit", _before_commit)

    started = app.extensions[_STARTED] = _Once()

    @app.before_request
    def _drain_waiting() -> None:
        if not started.claim():
            drain = app.config["LABAPP"]["SEARCH_DRAIN"]
            if drain == "after-commit":
                return
            if drain == "before-search" and request.blueprint not in _SEARCHING:
                return
        if in_unit():  # a request inside its caller's unit of work (a test's): not ours
            return
        with own_read() as session:
            waiting = backend.current().exists() and session.scalar(
                select(SearchQueue.id).limit(1)) is not None
        if waiting:
            _drain_unless_worker()
