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
"""
from __future__ import annotations

import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from flask import Flask, current_app
from sqlalchemy import delete, event, func, select
from sqlalchemy.orm import Session

from labapp import advisory
from labapp.access.labels import entity_labels
from labapp.atomic import write_whole
from labapp.db import after_commit, db, own_read, transaction, unit_state
from labapp.model import Entity, File, Note, SearchQueue
from labapp.search import index

# Rows per index commit: a small queue (what requests add) is one commit in this process; a
# backlog is indexed 20,000 rows a commit by worker processes (index.write).
BATCH = 20_000
_DELETE_CHUNK = 5000
_READ_CHUNK = 500
_WAKE = "labapp.search.wake"
HEARTBEAT_EVERY = 0.5  # seconds between the worker's heartbeats
HEARTBEAT_STALE = 3.0  # a heartbeat older than this: no live worker, requests drain inline
logger = logging.getLogger(__name__)
_STARTED = "labapp.search.started"  # app.extensions: the event set once the first drain ran


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


def index_path() -> Path:
    """The index folder of the current application."""
    settings = current_app.config["LABAPP"]
    configured = settings.get("SEARCH_INDEX_PATH")
    return Path(configured) if configured else Path(settings["INSTANCE_PATH"]) / "search-index"


def writer_timeout() -> float:
    return float(current_app.config["LABAPP"]["SEARCH_WRITER_TIMEOUT"])


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
    if isinstance(attributes, dict):
        for value in attributes.values():
            yield from _attribute_values(value)
    elif isinstance(attributes, list):
        for value in attributes:
            yield from _attribute_values(value)
    elif not isinstance(attributes, bool):
        yield attributes


def documents_for(entity_ids: list[str]) -> tuple[list[index.Document], list[str]]:
    """The documents of the entities ``entity_ids`` as stored now, and the ids that no
    longer exist."""
    documents: list[index.Document] = []
    for start in range(0, len(entity_ids), _READ_CHUNK):
        documents.extend(_documents(entity_ids[start:start + _READ_CHUNK]))
    found = {document.id for document in documents}
    return documents, [entity_id for entity_id in entity_ids if entity_id not in found]


def _documents(ids: list[str]) -> list[index.Document]:
    rows = db.session.execute(select(
        Entity.id, Entity.eclass, Entity.name, Entity.description, Entity.barcode,
        Entity.attributes, Entity.department_id, Entity.project_id).where(
        Entity.id.in_(ids))).all()
    attached: dict[str, list[str]] = defaultdict(list)
    own_content: dict[str, str] = {}
    for note_id, subject_id, content in db.session.execute(
            select(Note.id, Note.subject_id, Note.content).where(
                Note.subject_id.in_(ids) | Note.id.in_(ids))):
        if content and note_id in ids:
            own_content[note_id] = content
        if subject_id in ids and content:
            attached[subject_id].append(content)
    for subject_id, name in db.session.execute(
            select(File.subject_id, File.name).where(
                File.subject_id.in_(ids))):
        if subject_id is not None:
            attached[subject_id].append(name)
    return [_document(row, own_content.get(row.id), attached.get(row.id, ()))
            for row in rows]


def _document(row: Any, content: str | None, attached: Iterable[str]) -> index.Document:
    key_text = index.text_of((row.id, row.name, row.barcode))
    return index.Document(
        id=row.id, eclass=row.eclass,
        labels=entity_labels(row.eclass, row.department_id, row.project_id),
        key_text=key_text,
        text=index.text_of((key_text, row.description, content, *_attribute_values(row.attributes),
                    *attached)))


def all_documents() -> Iterator[index.Document]:
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
    path = index_path()
    if not index.exists(path):
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
        rows = _drain_batch(path)
        done += len(rows)
        if on_batch is not None:
            on_batch()
        if len(rows) < BATCH:
            return done


def _drain_batch(path: Path) -> list[Any]:
    """Index up to :data:`BATCH` queued changes in one index commit, then drop their rows."""
    rows: list[Any] = []

    def read_batch() -> tuple[list[index.Document], list[str]]:
        with own_read() as session:
            rows.extend(session.execute(select(SearchQueue.id, SearchQueue.entity_id)
                                        .order_by(SearchQueue.id).limit(BATCH)).all())
            return documents_for(list(dict.fromkeys(row.entity_id for row in rows)))

    index.write(path, read_batch, writer_timeout())
    if not rows:
        return rows
    done = [row.id for row in rows]
    with transaction() as session:
        for start in range(0, len(done), _DELETE_CHUNK):
            session.execute(delete(SearchQueue).where(
                SearchQueue.id.in_(done[start:start + _DELETE_CHUNK])))
    return rows


def _drain_after_commit() -> None:
    if worker_alive():  # the worker indexes the rows this unit of work queued
        return
    try:
        drain()
    except index.IndexBusy:
        logger.warning("search index busy; the queued changes wait for the next drain")
    except index.IndexUnavailable as error:
        logger.error("search index unavailable (%s); the queued changes wait for "
                     "`flask --app labapp search rebuild`", error)


def _wake(session: Session) -> None:
    """Drain the queue once the current unit of work has committed (once per unit)."""
    if session is not db.session():
        return
    try:
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


def _on_execute(state: Any) -> None:
    if not (state.is_insert or state.is_update or state.is_delete):
        return
    table = getattr(state.statement, "table", None)
    # An ORM statement's table is an annotated copy of the Table: compared by name (with
    # ``is``, the drain's own DELETE of its rows woke a nested drain, one per batch).
    if getattr(table, "name", None) == SearchQueue.__tablename__:
        return  # the indexer's own bookkeeping
    _wake(state.session)


def health() -> str | None:
    """None when the full-text index can be searched, else what the operator should do."""
    try:
        index.check(index_path())
    except index.IndexUnavailable as error:
        return f"{error} Run `flask --app labapp search rebuild`."
    return None


def init_app(app: Flask) -> None:
    """Wake the indexer after every unit of work that wrote entities (ORM flushes and Core
    statements alike), drain what earlier processes left on this process's first request,
    and report the index's state in ``/healthz`` (``app.extensions["labapp.health"]``)."""
    app.extensions.setdefault("labapp.health", {})["searchIndex"] = health
    if not event.contains(Session, "after_flush", _after_flush):
        event.listen(Session, "after_flush", _after_flush)
        event.listen(Session, "do_orm_execute", _on_execute)

    started = app.extensions[_STARTED] = _Once()

    @app.before_request
    def _drain_once_at_start() -> None:
        if not started.claim():
            return
        with own_read():
            waiting = index.exists(index_path()) and queue_length()
        if waiting:
            _drain_after_commit()
