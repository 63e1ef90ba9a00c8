"""Removing changes older than the retention, oldest first, by the worker.

The log is cut from its start only, so everything after the horizon (the largest number
removed, kept in ``change_log_horizon``) is still whole: a cursor at or past it is served,
one before it is answered 410. The newest change always stays, so the log's numbers go on
from it (SQLite gives the next number after the largest one held).
"""
from __future__ import annotations

from datetime import timedelta

from flask import current_app
from sqlalchemy import delete, select, update

from labapp.db import db, rows_matched, transaction
from labapp.model import ChangeLogEntry, ChangeLogHorizon
from labapp.model.types import utc_now

# Changes looked at, and at most removed, per write unit: SQLite's write lock is held for
# one chunk only.
CHUNK = 5_000


def remove_expired(days: int) -> int:
    """Remove one chunk of the changes older than ``days`` days; returns how many went."""
    cutoff = utc_now() - timedelta(days=days)
    with transaction(write=True):
        oldest = db.session.execute(
            select(ChangeLogEntry.seq, ChangeLogEntry.created_utc)
            .where(ChangeLogEntry.seq.is_not(None))
            .order_by(ChangeLogEntry.seq).limit(CHUNK + 1)).all()
        # The unbroken run of expired changes from the start (the horizon must leave none
        # behind it), never the last one read: when it is the newest, it stays.
        through = None
        for seq, created in oldest[:-1]:
            if created >= cutoff:
                break
            through = seq
        if through is None:
            return 0
        removed = rows_matched(delete(ChangeLogEntry).where(ChangeLogEntry.seq <= through))
        db.session.execute(update(ChangeLogHorizon).values(removed_through=through))
        return removed


def upkeep() -> bool:
    """The worker's job: one chunk past the retention; whether it removed any."""
    days = current_app.config["LABAPP"]["CHANGE_LOG_RETENTION_DAYS"]
    return bool(days) and remove_expired(days) > 0
