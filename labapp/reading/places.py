"""Where stored samples and plates are, as the pages and widgets that show them name it: a
location's name path, the short form a list shows (its parent's name and its own), and
whether the reader may open it.

Whoever may see an item may learn where it is, so the names are given whether or not the
reader may see the location itself (as its stored ``hierarchy`` path already shows every
ancestor's name, like a postal address); ``visible`` (the visibility rule, applied to the
row) says whether the reader may open it.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import aliased

from labapp.access.actor import Actor
from labapp.access.visibility import NONE, access_type
from labapp.db import db
from labapp.model import Location


@dataclass(frozen=True)
class Place:
    """A storage location as the items stored in it show it: its name path (``Lab 2 /
    Freezer -80 / Rack 3 / Box 12``), whether the reader may open it, and its last two parts
    (``Rack 3 / Box 12``), which a list shows where a column has no room for the path."""

    path: str
    visible: bool
    short: str = ""

    @property
    def brief(self) -> str:
        """The short form, the path when there is none."""
        return self.short or self.path


def stored_places(actor: Actor, location_ids: Iterable[str]) -> dict[str, Place]:
    """``id → Place`` of the locations among ``location_ids``, in one query. The caller
    passes only the locations of items the actor may see; an unknown id is missing from the
    answer."""
    wanted = sorted({location_id for location_id in location_ids if location_id})
    if not wanted:
        return {}
    parent = aliased(Location)
    rows = db.session.execute(
        select(Location.id, Location.name, Location.hierarchy, Location.eclass,
               Location.department_id, Location.project_id, parent.name.label("parent_name"))
        .outerjoin(parent, parent.id == Location.parent_id)
        .where(Location.id.in_(wanted)))
    return {row.id: Place(row.hierarchy or row.name or row.id,
                          access_type(actor, row.eclass, row.department_id,
                                      row.project_id) != NONE,
                          " / ".join(name for name in (row.parent_name, row.name or row.id)
                                     if name))
            for row in rows}
