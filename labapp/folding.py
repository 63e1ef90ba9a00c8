"""Counts kept as appended changes: database triggers append ``+n``/``-n`` rows to a change
table in the transaction of each write, so concurrent writers never wait on a shared counter
row, and :func:`fold` adds them into a table of folded counts (the worker does it as they
come). The true count of a key is always the sum over both tables.

The entity tallies (:mod:`labapp.model.tallies`) and the items stored per location
(:class:`labapp.model.LocationCount`) are kept this way.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table, delete, select
from sqlalchemy.dialects import postgresql, sqlite

from labapp.db import db, own_read, transaction


def pending(changes: Table) -> bool:
    """Whether ``changes`` holds a change to fold (in a read of its own)."""
    with own_read() as session:
        return session.scalar(select(changes.c.id).limit(1)) is not None


def fold(changes: Table, counts: Table, key: Sequence[str]) -> int:
    """Add every committed change of ``changes`` into ``counts`` (both keyed by the columns
    ``key``, with the count in ``n``), in one transaction; keys whose count reaches 0 are
    removed. Return how many change rows were folded. The changes are deleted as they are
    read (``DELETE ... RETURNING``), so two folds at once never count one change twice."""
    with transaction() as session:
        taken = session.execute(delete(changes).returning(
            *(changes.c[column] for column in key), changes.c.n)).all()
        sums: Counter[tuple[Any, ...]] = Counter()
        for row in taken:
            sums[tuple(row[:-1])] += row.n
        values = [dict(zip(key, values, strict=True), n=n) for values, n in sums.items() if n]
        if values:
            dialect = postgresql if db.engine.dialect.name == "postgresql" else sqlite
            statement = dialect.insert(counts)
            session.execute(statement.on_conflict_do_update(
                index_elements=list(key), set_={"n": counts.c.n + statement.excluded.n}),
                values)
            session.execute(delete(counts).where(counts.c.n == 0))
    return len(taken)
