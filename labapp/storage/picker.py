"""What a form may offer as a place for a new sample or plate: locations the user may store
into that have room, and the free slots of one of them (hidden occupants count as taken).

Offering only these is a courtesy: saving still goes through the check-in rule, which
refuses a slot taken meanwhile.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from labapp.access.actor import Actor
from labapp.access.visibility import writable
from labapp.db import db
from labapp.errors import NotFound
from labapp.model import Location
from labapp.storage import slots
from labapp.storage.checkin import occupied_positions
from labapp.storage.service import get_location, grid_of, limit_of, name_order, stored_counts

MAX_CHOICES = 500


@dataclass(frozen=True)
class PlaceChoice:
    """A location offered to store into: its id, name path and free places (None:
    unlimited)."""

    id: str
    path: str
    free: int | None

    @property
    def label(self) -> str:
        room = "no limit" if self.free is None else f"{self.free} free"
        return f"{self.path} · {room}"


def place_options(actor: Actor) -> list[tuple[str, str]]:
    """``(id, label)`` of :func:`place_choices`, as a select offers them."""
    return [(choice.id, choice.label) for choice in place_choices(actor)]


def place_choices(actor: Actor) -> list[PlaceChoice]:
    """The Active locations the actor may store into that have room, by path with the
    numbers in it by value ("Box 3" before "Box 10", :func:`name_order`; at most
    :data:`MAX_CHOICES`)."""
    rows = sorted(db.session.execute(
        select(Location.id, Location.name, Location.hierarchy, Location.capacity,
               Location.rows, Location.columns)
        .where(writable(actor, Location), Location.status == "Active")).all(),
        key=lambda row: name_order(row.hierarchy or row.name or "", row.id))
    stored = stored_counts([row.id for row in rows])
    choices = []
    for row in rows:
        limit = limit_of(row.capacity, row.rows, row.columns)
        free = None if limit is None else limit - stored.get(row.id, 0)
        if free is None or free > 0:
            choices.append(PlaceChoice(row.id, row.hierarchy or row.name, free))
        if len(choices) == MAX_CHOICES:
            break
    return choices


def free_slots(actor: Actor, location_id: str) -> list[str]:
    """The free slots of a visible grid location in filling order; empty for a location
    without a grid or one the actor may not see."""
    try:
        location = get_location(actor, location_id)
    except NotFound:
        return []
    grid = grid_of(location.rows, location.columns)
    if grid is None:
        return []
    return list(slots.free_cells(*grid, occupied_positions(location_id)))
