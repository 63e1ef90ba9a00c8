"""The search feature's part of the worker (:mod:`labapp.worker`): drain the queue as it fills.

Requests then only write their queue rows (the triggers do, in the request's transaction)
and return; the Whoosh work runs on the worker's CPU. :func:`upkeep` looks at the queue with
one cheap query and drains what it finds (:func:`indexer.drain`: 1,000 rows per index commit,
rows deleted only after their commit, so a worker killed mid-batch loses nothing), while
:func:`heartbeat` keeps a thread refreshing the heartbeat file every
:data:`indexer.HEARTBEAT_EVERY` seconds. While the heartbeat is fresh, requests skip their
inline drain; a worker that stops cleanly removes it, one that dies lets it go stale, and
requests drain inline again.

The heartbeat promises that the queue is being drained, so it is refreshed only while the
one loop that drains it shows it does (its :class:`Pulse`: a look at the queue, or a batch
indexed, within :data:`DRAIN_STALLED` seconds). Whatever else the worker does meanwhile (an
import's commit of minutes) never keeps it fresh: a stalled drain lets the heartbeat go
stale and requests index inline again.

On PostgreSQL, requests of every host ask the database instead of the file
(:func:`indexer.worker_alive`): while the pulse is fresh the heartbeat thread also holds an
advisory lock of :data:`labapp.advisory.SEARCH_DRAIN` on a connection of its own, taken
before the first beat and dropped when the drain stalls, the worker stops or dies.
"""
from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, select
from sqlalchemy.exc import SQLAlchemyError

from labapp import advisory
from labapp.db import db, end_read, own_read
from labapp.model import SearchQueue
from labapp.search import indexer
from labapp.search.analysis import IndexBusy, IndexUnavailable

# Seconds the draining loop may go without a look at the queue or a batch indexed before the
# heartbeat stops: longer than a batch's index commit plus SQLite's busy timeout, far
# shorter than an import's commit.
DRAIN_STALLED = 15.0
logger = logging.getLogger(__name__)


class Pulse:
    """When the loop that drains the search queue last showed it is alive (thread-safe: one
    float written by that loop, read by the heartbeat thread)."""

    def __init__(self) -> None:
        self._at = time.monotonic()

    def touch(self) -> None:
        """The loop looked at the queue or indexed a batch now."""
        self._at = time.monotonic()

    def within(self, seconds: float) -> bool:
        """Whether the loop showed it was alive in the last ``seconds``."""
        return time.monotonic() - self._at < seconds


def _waiting() -> bool:
    with own_read() as session:
        return session.scalar(select(SearchQueue.id).limit(1)) is not None


def upkeep(pulse: Pulse | None = None) -> bool:
    """Drain the search queue into the index when changes wait; True when some did (an
    index that is busy or unavailable is logged, and the next look tries again). ``pulse``
    is touched after each batch indexed."""
    if not _waiting():
        return False
    try:
        indexer.drain(on_batch=None if pulse is None else pulse.touch)
    except IndexBusy:
        logger.warning("search index busy; trying again")
    except IndexUnavailable as error:
        logger.error("search index unavailable (%s); run `flask --app labapp search rebuild`",
                     error)
    finally:
        end_read()
    return True


@contextmanager
def heartbeat(pulse: Pulse) -> Iterator[None]:
    """Tell the requests a worker drains the queue: the heartbeat is written on entry,
    refreshed by a thread of its own while ``pulse`` shows the draining loop alive within
    :data:`DRAIN_STALLED` seconds (a long drain of many batches keeps it fresh, a stalled
    one does not) and removed on the way out (in an application context)."""
    path = indexer.heartbeat_path()
    lock = _DrainLock(db.engine) if advisory.on_postgresql(db.engine) else None
    if lock is not None:
        lock.hold(True)
    indexer.beat(path)
    stop = threading.Event()
    beating = threading.Thread(target=_beat_until, args=(stop, path, pulse, lock),
                               daemon=True, name="search-heartbeat")
    beating.start()
    try:
        yield
    finally:
        stop.set()
        beating.join()
        if lock is not None:
            lock.hold(False)
        _remove_own(path)


class _DrainLock:
    """This worker's advisory lock telling every host that it drains the search queue."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.key = advisory.key(f"search drain {os.getpid()} {secrets.token_hex(6)}")
        self.held: advisory.Held | None = None

    def hold(self, fresh: bool) -> None:
        """Hold the lock while the drain is ``fresh``, else drop it (a database that
        refuses is logged; the next beat tries again)."""
        if fresh and self.held is None:
            try:
                self.held = advisory.take(self.engine, advisory.SEARCH_DRAIN, self.key)
            except SQLAlchemyError as error:
                logger.warning("search heartbeat not held in the database: %s", error)
        elif not fresh and self.held is not None:
            self.held.release()
            self.held = None


def _beat_until(stop: threading.Event, path: Path, pulse: Pulse,
                lock: _DrainLock | None) -> None:
    while not stop.is_set():
        fresh = pulse.within(DRAIN_STALLED)
        if lock is not None:
            lock.hold(fresh)
        if fresh:
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
