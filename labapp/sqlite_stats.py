"""SQLite's planner statistics: SQLite plans without them unless ``ANALYZE`` runs.

Without statistics SQLite guesses: a reader's list is driven from the visibility predicate's
``OR`` over two indexes and every visible row is sorted, where walking the name or primary
key index and stopping after a page would do (bench/runs/2026-11-21-bulk-create-and-pages.md
and 2026-11-23-dashboards.md measured 2-3×). ``PRAGMA optimize`` samples too little on
SQLite 3.40 to change those plans; a full ``ANALYZE`` takes ~0.15 s per 100,000 entities.
PostgreSQL's autovacuum keeps its own statistics, so this is SQLite's only.

:func:`refresh` gathers them when the database holds real data and they are missing or
the entity count moved by more than :data:`DRIFT` since they were taken. ``flask init``
(every start) and ``flask sync restore`` call it; the worker (:mod:`labapp.worker`) calls
:func:`upkeep` every ``SQLITE_STATISTICS_SECONDS`` (a setting).
"""
from __future__ import annotations

import logging

from sqlalchemy import func, select, text

from labapp.db import db, own_read, transaction
from labapp.model import Entity

ANALYZE_FROM = 1000  # entities: statistics of a nearly empty database mislead later
DRIFT = 0.2  # re-gather when the entity count moved by more than this share
logger = logging.getLogger(__name__)


def _recorded_entities() -> int | None:
    """The entity count the last ``ANALYZE`` saw, or None without statistics."""
    has_table = db.session.scalar(text(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'"))
    if not has_table:
        return None
    # Each row's stat starts with the rows its index holds (a partial index fewer).
    counted: int | None = db.session.scalar(text(
        "SELECT max(CAST(stat AS INTEGER)) FROM sqlite_stat1 WHERE tbl = 'entity'"))
    return counted


def refresh() -> bool:
    """Run ``ANALYZE`` on SQLite when it is due (see the module); True when it ran."""
    if db.engine.dialect.name != "sqlite":
        return False
    with own_read() as session:  # no write lock held while counting
        entities = session.scalar(select(func.count()).select_from(Entity)) or 0
        recorded = _recorded_entities()
    if entities < ANALYZE_FROM or (
            recorded is not None and abs(entities - recorded) <= DRIFT * recorded):
        return False
    with transaction() as session:
        session.execute(text("ANALYZE"))
    return True


def upkeep() -> bool:
    """The worker's upkeep of the statistics: :func:`refresh`, logged when it ran."""
    ran = refresh()
    if ran:
        logger.info("gathered the planner statistics (SQLite ANALYZE)")
    return ran
