"""Rebuilding the whole index from the database, while the application keeps serving."""
from __future__ import annotations

from collections.abc import Callable
from functools import partial

from sqlalchemy import delete, select

from labapp.db import own_read, transaction
from labapp.model import Entity, SearchQueue
from labapp.search import backend
from labapp.search.analysis import Document, IndexUnavailable
from labapp.search.backend import SearchBackend
from labapp.search.indexer import all_documents, documents_for, drain

_DELETE_CHUNK = 1000
_UNIT_ENTITIES = 1000  # entities whose documents one unit of work of a rewrite replaces
_CHECKED_IDS = 1000  # documents per read when looking for those of vanished entities


def rebuild_index(progress: Callable[[int], None] | None = None) -> int:
    """Replace the index by the documents of every entity; return how many were indexed.

    The queue rows present when the rebuild starts are covered by it and deleted after its
    commit; changes committed meanwhile stay queued and are drained right after, so nothing
    is missed. Other workers' drains wait for the rebuild's lock (then leave their rows).
    A backend that writes in transactions is rewritten in units of :data:`_UNIT_ENTITIES`
    entities (:func:`_rewrite`), so the hosts keep serving: a change to an entity waits at
    most for the unit holding it, and searches find every other document meanwhile.
    """
    search = backend.current()
    with own_read() as session:
        covered = list(session.scalars(select(SearchQueue.id)))
        if not search.in_transaction:
            count = search.rebuild(all_documents(), progress)
    if search.in_transaction:
        count = _rewrite(search, progress)
    with transaction() as session:
        for start in range(0, len(covered), _DELETE_CHUNK):
            session.execute(delete(SearchQueue).where(
                SearchQueue.id.in_(covered[start:start + _DELETE_CHUNK])))
    drain()
    return count


def _rewrite(search: SearchBackend, progress: Callable[[int], None] | None) -> int:
    """Replace the documents of every entity, in id order, a unit of work per
    :data:`_UNIT_ENTITIES` entities that holds their documents before reading them (so a
    unit of work writing one of them meanwhile either committed before or rewrites it
    after); then delete the documents of entities that no longer exist
    (:func:`_delete_orphans`). Return how many documents were written."""
    count, last = 0, ""
    while True:
        with own_read() as session:
            ids = list(session.scalars(select(Entity.id).where(Entity.id > last)
                                       .order_by(Entity.id).limit(_UNIT_ENTITIES)))
        if not ids:
            break
        written: list[Document] = []

        def produce(ids: list[str] = ids,
                    written: list[Document] = written) -> tuple[list[Document], list[str]]:
            documents, gone = documents_for(ids)
            written.extend(documents)
            return documents, gone

        with transaction():
            search.write(produce, holding=ids)
        count += len(written)
        if progress is not None:
            progress(len(ids))
        last = ids[-1]
    _delete_orphans(search)
    return count


def _delete_orphans(search: SearchBackend) -> None:
    """Delete the documents of entities that no longer exist, a page of
    :data:`_CHECKED_IDS` documents at a time: each page and the entities it names are read
    in one snapshot, so memory stays bounded however many documents there are (holding
    every id was ~100 MB at a million)."""
    last = ""
    while True:
        with own_read() as session:
            page = search.document_ids_after(last, _CHECKED_IDS)
            if not page:
                return
            existing = set(session.scalars(select(Entity.id).where(Entity.id.in_(page))))
        gone = [entity_id for entity_id in page if entity_id not in existing]
        if gone:
            with transaction():
                search.write(partial(_nothing_but, gone))
        last = page[-1]


def _nothing_but(gone: list[str]) -> tuple[list[Document], list[str]]:
    """What a write deleting the documents of ``gone`` (and writing none) produces."""
    return [], gone


def ensure_search_index() -> bool:
    """Build the index when it is missing or unreadable (``flask init``); return whether it
    was built. A working index is only brought up to date with the queue."""
    try:
        backend.current().check()
    except IndexUnavailable:
        rebuild_index()
        return True
    drain()
    return False
