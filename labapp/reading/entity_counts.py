"""What the entity tallies say (labapp/model/tallies.py): how many entities of a class an
actor may see, from a few rows per class and day instead of every entity.

The tallies are the folded counts plus the changes not folded yet; the database's triggers
write the changes in the transaction of every entity change, so one statement over both is
exact in its snapshot. :mod:`labapp.dashboards.tally_folding` folds them.
"""
from __future__ import annotations

from sqlalchemy import ColumnElement, Subquery, func, select, union_all

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.model import EntityCount, EntityCountChange

KEY = ("eclass", "day", "status", "department_id", "project_id")


def counts(eclass: str) -> Subquery:
    """Rows ``(eclass, day, status, department_id, project_id, n)`` of class ``eclass``
    whose ``n`` add up to its true counts (no department or project is ``''``)."""
    parts = [select(*(getattr(table, column) for column in (*KEY, "n")))
             .where(table.eclass == eclass) for table in (EntityCount, EntityCountChange)]
    return union_all(*parts).subquery("tally")


def visible_tally(actor: Actor, eclass: str) -> tuple[Subquery, ColumnElement[bool]]:
    """The tally rows of ``eclass`` and the predicate of those the actor may count (the
    visibility rule on the tallies' class, department and project)."""
    tally = counts(eclass)
    return tally, readable(actor, tally.c)


def visible_total(actor: Actor, eclass: str) -> int:
    """How many entities of ``eclass`` the actor may see."""
    tally, visible = visible_tally(actor, eclass)
    return int(db.session.scalar(select(func.coalesce(func.sum(tally.c.n), 0))
                                 .where(visible)) or 0)
