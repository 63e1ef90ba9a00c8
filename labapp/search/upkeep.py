"""The search feature's part of the worker (:mod:`labapp.worker`): drain the queue as it fills.

Requests then only write their queue rows (the triggers do, in the request's transaction)
and return; the Whoosh work runs on the worker's CPU. :func:`upkeep` looks at the queue with
one cheap query and drains what it finds (:func:`indexer.drain`: 1,000 rows per index commit,
rows deleted only after their commit, so a worker killed mid-batch loses nothing), while
:func:`heartbeat` keeps a thread refreshing the heartbeat file every
:data:`indexer.HEARTBEAT_EVERY` seconds. While the heartbeat is fresh, requests skip their
inline drain; a worker that stops cleanly removes it, one that dies lets it go stale, and
requests drain inline again.
"""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import select

from labapp.db import end_read, own_read
from labapp.model import SearchQueue
from labapp.search import index, indexer

logger = logging.getLogger(__name__)


def _waiting() -> bool:
    with own_read() as session:
        return session.scalar(select(SearchQueue.id).limit(1)) is not None


def upkeep() -> bool:
    """Drain the search queue into the index when changes wait; True when some did (an
    index that is busy or unavailable is logged, and the next look tries again)."""
    if not _waiting():
        return False
    try:
        indexer.drain()
    except index.IndexBusy:
        logger.warning("search index busy; trying again")
    except index.IndexUnavailable as error:
        logger.error("search index unavailable (%s); run `flask --app labapp search rebuild`",
                     error)
    finally:
        end_read()
    return True


@contextmanager
def heartbeat() -> Iterator[None]:
    """Tell the requests a worker drains the queue: the heartbeat is written on entry,
    refreshed by a thread of its own (a long drain must not let it go stale, or requests
    would start draining too) and removed on the way out (in an application context)."""
    path = indexer.heartbeat_path()
    indexer.beat(path)
    stop = threading.Event()
    beating = threading.Thread(target=_beat_until, args=(stop, path), daemon=True,
                               name="search-heartbeat")
    beating.start()
    try:
        yield
    finally:
        stop.set()
        beating.join()
        _remove_own(path)


def _beat_until(stop: threading.Event, path: Path) -> None:
    while not stop.is_set():
        indexer.beat(path)
        stop.wait(indexer.HEARTBEAT_EVERY)


def _remove_own(path: Path) -> None:
    """Remove the heartbeat when it is this process's (another worker may have taken over)."""
    try:
        with open(path) as file:
            if file.read().strip() == str(os.getpid()):
                os.remove(path)
    except OSError:
        pass
