"""How many items each location holds directly, kept by the database
(:class:`~labapp.model.LocationCount`): what the storage tree sums, a row or two per
location instead of every stored item.

:func:`held` (probed per location) and :func:`counted` (every location at once) are the
counts as SQL (folded count plus the changes not folded yet: exact in the statement's
snapshot); :func:`upkeep` is the worker's fold
(:mod:`labapp.folding`), which ``flask init`` and ``flask sync restore`` also run once.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Subquery, func, select, union_all

from labapp import folding
from labapp.db import table_of
from labapp.model import LocationCount, LocationCountChange

_COUNT = table_of(LocationCount)
_CHANGE = table_of(LocationCountChange)


def held(location_id: ColumnElement[Any]) -> ColumnElement[int]:
    """The number of items stored directly in the location ``location_id`` (a column of the
    enclosing query), probed per location: its folded count plus its pending changes."""
    folded = select(_COUNT.c.n).where(_COUNT.c.location_id == location_id).scalar_subquery()
    unfolded = (select(func.sum(_CHANGE.c.n)).where(_CHANGE.c.location_id == location_id)
                .scalar_subquery())
    return func.coalesce(folded, 0) + func.coalesce(unfolded, 0)


def counted() -> Subquery:
    """``(location_id, n)``: every location holding items, with how many it holds directly
    (the folded counts and the pending changes summed; a few rows per location)."""
    rows = union_all(select(_COUNT.c.location_id, _COUNT.c.n),
                     select(_CHANGE.c.location_id, _CHANGE.c.n)).subquery("counts")
    return (select(rows.c.location_id, func.sum(rows.c.n).label("n"))
            .group_by(rows.c.location_id).subquery("counted"))


def fold() -> int:
    """Add the pending changes into the folded counts; how many change rows were folded."""
    return folding.fold(_CHANGE, _COUNT, ("location_id",))


def upkeep() -> bool:
    """The worker's upkeep of the counts: fold the pending changes; True when there were
    any."""
    return folding.pending(_CHANGE) and fold() > 0
