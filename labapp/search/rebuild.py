"""Rebuilding the whole index from the database, while the application keeps serving."""
from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import delete, select

from labapp.db import own_read, transaction
from labapp.model import SearchQueue
from labapp.search import backend
from labapp.search.analysis import IndexUnavailable
from labapp.search.indexer import all_documents, drain

_DELETE_CHUNK = 1000


def rebuild_index(progress: Callable[[int], None] | None = None) -> int:
    """Replace the index by the documents of every entity; return how many were indexed.

    The queue rows present when the rebuild starts are covered by it and deleted after its
    commit; changes committed meanwhile stay queued and are drained right after, so nothing
    is missed. Other workers' drains wait for the rebuild's lock (then leave their rows).
    A backend that writes in transactions is rebuilt in one unit of work, queue rows
    included.
    """
    search = backend.current()
    if search.in_transaction:
        with transaction() as session:
            count = search.rebuild(all_documents(), progress)
            session.execute(delete(SearchQueue))
        return count
    with own_read() as session:
        covered = list(session.scalars(select(SearchQueue.id)))
        count = search.rebuild(all_documents(), progress)
    with transaction() as session:
        for start in range(0, len(covered), _DELETE_CHUNK):
            session.execute(delete(SearchQueue).where(
                SearchQueue.id.in_(covered[start:start + _DELETE_CHUNK])))
    drain()
    return count


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
