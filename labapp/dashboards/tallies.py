"""Reading and folding the entity tallies (labapp/model/tallies.py).

What the tallies say is read through :mod:`labapp.reading.tallies`. :func:`fold` moves the changes
into the folded counts; the worker (:mod:`labapp.worker`) calls :func:`upkeep` as
changes come, ``flask init`` and ``flask sync restore`` call :func:`fold` once. Folding
only makes reading cheaper: the sum is the same before and after.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite

from labapp.db import db, transaction
from labapp.model import EntityCount, EntityCountChange
from labapp.reading.tallies import KEY


def pending() -> bool:
    """Whether there are changes to fold."""
    try:
        return db.session.scalar(select(EntityCountChange.id).limit(1)) is not None
    finally:
        db.session.rollback()


def _upsert(values: list[dict[str, Any]]) -> Any:
    dialect = postgresql if db.engine.dialect.name == "postgresql" else sqlite
    table = EntityCount.__table__
    statement = dialect.insert(table)
    return statement.on_conflict_do_update(
        index_elements=list(KEY), set_={"n": table.c.n + statement.excluded.n})


def fold() -> int:
    """Add every committed change into the folded counts, in one transaction; return how
    many change rows were folded. The changes are deleted as they are read (``DELETE ...
    RETURNING``), so two folds at once never count one change twice."""
    with transaction() as session:
        taken = session.execute(delete(EntityCountChange).returning(
            *(getattr(EntityCountChange, column) for column in (*KEY, "n")))).all()
        sums: Counter[tuple[Any, ...]] = Counter()
        for row in taken:
            sums[tuple(row[:-1])] += row.n
        values = [dict(zip(KEY, key, strict=True), n=n) for key, n in sums.items() if n]
        if values:
            session.execute(_upsert(values), values)
            session.execute(delete(EntityCount).where(EntityCount.n == 0))
    return len(taken)


def upkeep() -> bool:
    """The worker's upkeep of the tallies: fold the pending changes; True when there were
    any."""
    return pending() and fold() > 0
