"""The indexer process: ``flask --app labapp search worker`` drains the search queue as it fills.

Requests then only write their queue rows (the triggers do, in the request's transaction)
and return; the Whoosh work runs on this process's CPU. The loop polls the queue with one
cheap query every :data:`POLL` seconds, drains what it finds (:func:`indexer.drain`: 1,000
rows per index commit, rows deleted only after their commit, so a worker killed mid-batch
loses nothing), while a thread refreshes the heartbeat file every
:data:`indexer.HEARTBEAT_EVERY` seconds. While the heartbeat is fresh, requests skip their
inline drain; a worker that stops cleanly removes it, one that dies lets it go stale, and
requests drain inline again.

Being the one long-running process beside gunicorn, the worker also folds the entity
tallies' changes when the queue is empty (:func:`labapp.tallies.fold`) and refreshes SQLite's
planner statistics when the data has grown (:func:`labapp.planner.refresh`, looked at every
``SQLITE_STATISTICS_SECONDS``; 0 turns that off).
"""
from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from flask import current_app
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from labapp import planner, tallies
from labapp.db import db
from labapp.model import SearchQueue
from labapp.search import index, indexer

POLL = 0.15  # seconds between two looks at the queue when it was empty
logger = logging.getLogger(__name__)


def _waiting() -> bool:
    try:
        return db.session.scalar(select(SearchQueue.id).limit(1)) is not None
    finally:
        db.session.rollback()


def _drain_once() -> None:
    try:
        indexer.drain()
    except index.IndexBusy:
        logger.warning("search index busy; trying again")
    except index.IndexUnavailable as error:
        logger.error("search index unavailable (%s); run `flask --app labapp search rebuild`",
                     error)
    finally:
        db.session.rollback()


def _attempt(task: Callable[[], object], failure: str) -> bool:
    """Run a maintenance task; False when the database refused it (busy or locked: the next
    look tries again)."""
    try:
        task()
        return True
    except SQLAlchemyError as error:
        logger.warning("%s: %s", failure, error)
        db.session.rollback()
        return False


def _gather_statistics() -> None:
    if planner.refresh():
        logger.info("gathered the planner statistics (SQLite ANALYZE)")


def _beat_until(stop: threading.Event, heartbeat: Path) -> None:
    """Refresh the heartbeat every :data:`indexer.HEARTBEAT_EVERY` s (a thread of its own:
    a long drain must not let it go stale, or requests would start draining too)."""
    while not stop.is_set():
        indexer.beat(heartbeat)
        stop.wait(indexer.HEARTBEAT_EVERY)


def run(stop: threading.Event) -> None:
    """Drain the queue until ``stop`` is set (in an application context). The heartbeat
    is written before the first drain and removed on the way out."""
    heartbeat = indexer.heartbeat_path()
    indexer.beat(heartbeat)
    beating = threading.Thread(target=_beat_until, args=(stop, heartbeat), daemon=True,
                               name="search-heartbeat")
    beating.start()
    every = float(current_app.config["LABAPP"]["SQLITE_STATISTICS_SECONDS"])
    statistics_due = time.monotonic() if every else float("inf")
    try:
        while not stop.is_set():
            if _waiting():
                _drain_once()
            elif not (tallies.pending()
                      and _attempt(tallies.fold, "entity tallies not folded")):
                stop.wait(POLL)  # nothing to do, or a fold that failed: look again soon
            if time.monotonic() >= statistics_due:
                _attempt(_gather_statistics, "planner statistics not gathered")
                statistics_due = time.monotonic() + every
    finally:
        stop.set()
        beating.join()
        db.session.remove()
        _remove_own(heartbeat)


def _remove_own(heartbeat: Path) -> None:
    """Remove the heartbeat when it is this process's (another worker may have taken over)."""
    try:
        with open(heartbeat) as file:
            if file.read().strip() == str(os.getpid()):
                os.remove(heartbeat)
    except OSError:
        pass
