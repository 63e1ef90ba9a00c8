"""The dry run's view of where imported samples and plates go: the check-in rule's refusals
found before anything is written.

The commit itself goes through the entity batch, whose planner applies the one check-in
rule (:mod:`labapp.storage.placement`); this only foresees its refusals row by row —
a location the actor cannot write or that is not Active, a slot outside the grid, a slot
taken by a stored item or by an earlier row of the file, a location that is full — with the
storage functions the rule itself uses.
"""
from __future__ import annotations

from labapp.access.actor import Actor
from labapp.access.visibility import WRITE, access_type
from labapp.imports.targets import Place
from labapp.storage import slots
from labapp.storage.checkin import occupied_positions
from labapp.storage.service import LOCATION, has_grid, limit_of, stored_counts


class Placements:
    """Slots and room of the locations an import fills, as its rows claim them."""

    def __init__(self, actor: Actor) -> None:
        self.actor = actor
        self._occupied: dict[str, dict[str, str]] = {}
        self._claimed: dict[str, dict[str, int]] = {}
        self._count: dict[str, int] = {}

    def _holders(self, place: Place) -> dict[str, str]:
        if place.id not in self._occupied:
            self._occupied[place.id] = occupied_positions(place.id)
        return self._occupied[place.id]

    def _stored(self, place: Place) -> int:
        if place.id not in self._count:
            self._count[place.id] = stored_counts([place.id]).get(place.id, 0)
        return self._count[place.id]

    def claim(self, row: int, place: Place, wanted: str | None, item_id: str | None,
              current: tuple[str | None, str | None]) -> tuple[str | None, str | None]:
        """``(canonical slot, None)`` when row ``row`` may put its item (``item_id`` when it
        is stored already, at ``current`` = (location, slot)) at ``place``/``wanted``;
        ``(None, problem)`` otherwise. A successful claim counts for the rows after it."""
        if access_type(self.actor, LOCATION, place.department_id, place.project_id) != WRITE:
            return None, f"you may read but not store into location {place.id!r}"
        if place.status != "Active":
            return None, f"location {place.id} is {place.status}; nothing can be checked in"
        canonical = None
        if wanted is not None:
            if not has_grid(place.rows, place.columns):
                return None, f"location {place.id} has no rows × columns grid"
            canonical = slots.canonical(wanted, place.rows or 0, place.columns or 0)
            if canonical is None:
                return None, (f"{wanted!r} is not a slot of the {place.rows} × {place.columns} "
                              f"grid of {place.id}")
        staying = current[0] == place.id
        if staying and canonical in (None, current[1]):
            return current[1], None
        if canonical is not None:
            holder = self._holders(place).get(canonical)
            if holder is not None and holder != item_id:
                return None, f"slot {canonical} of location {place.id} is taken (by {holder})"
            earlier = self._claimed.setdefault(place.id, {}).get(canonical)
            if earlier is not None:
                return None, (f"slot {canonical} of location {place.id} is also given to row "
                              f"{earlier}")
        limit = limit_of(place.capacity, place.rows, place.columns)
        if not staying and limit is not None:
            if self._stored(place) + 1 > limit:
                return None, f"location {place.id} is full (it holds at most {limit} items)"
            self._count[place.id] += 1
        if canonical is not None:
            self._claimed[place.id][canonical] = row
        return canonical, None
