"""Reading and folding the entity tallies (labapp/model/tallies.py).

What the tallies say is read through :mod:`labapp.reading.entity_counts`. :func:`fold`
moves the changes into the folded counts (:mod:`labapp.folding`); the worker
(:mod:`labapp.worker`) calls :func:`upkeep` as changes come, ``flask init`` and
``flask sync restore`` call :func:`fold` once. Folding only makes reading cheaper: the sum
is the same before and after.
"""
from __future__ import annotations

from labapp import folding
from labapp.db import table_of
from labapp.model import EntityCount, EntityCountChange
from labapp.reading.entity_counts import KEY


def pending() -> bool:
    """Whether there are changes to fold."""
    return folding.pending(table_of(EntityCountChange))


def fold() -> int:
    """Add every committed change into the folded counts; return how many change rows were
    folded (:func:`labapp.folding.fold`)."""
    return folding.fold(table_of(EntityCountChange), table_of(EntityCount), KEY)


def upkeep() -> bool:
    """The worker's upkeep of the tallies: fold the pending changes; True when there were
    any."""
    return pending() and fold() > 0
