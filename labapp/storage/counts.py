"""How many items each location holds directly, kept by the database
(:class:`~labapp.model.LocationCount`): what the storage tree sums, a row or two per
location instead of every stored item.

:func:`held` is the count of one location as SQL (folded count plus the changes not folded
yet: exact in the statement's snapshot); :func:`upkeep` is the worker's fold
(:mod:`labapp.folding`), which ``flask init`` and ``flask sync restore`` also run once.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, func, select

from labapp import folding
from labapp.db import table_of
from labapp.model import LocationCount, LocationCountChange

_COUNT = table_of(LocationCount)
_CHANGE = table_of(LocationCountChange)


def held(location_id: ColumnElement[Any]) -> ColumnElement[int]:
    """The number of items stored directly in the location ``location_id`` (a column of the
    enclosing query): its samples not on a plate and its plates, whoever may see them."""
    folded = select(_COUNT.c.n).where(_COUNT.c.location_id == location_id).scalar_subquery()
    unfolded = (select(func.sum(_CHANGE.c.n)).where(_CHANGE.c.location_id == location_id)
                .scalar_subquery())
    return func.coalesce(folded, 0) + func.coalesce(unfolded, 0)


def fold() -> int:
    """Add the pending changes into the folded counts; how many change rows were folded."""
    return folding.fold(_CHANGE, _COUNT, ("location_id",))


def upkeep() -> bool:
    """The worker's upkeep of the counts: fold the pending changes; True when there were
    any."""
    return folding.pending(_CHANGE) and fold() > 0
