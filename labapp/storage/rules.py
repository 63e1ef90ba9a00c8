"""What creating or updating Locations, Samples and Plates through the entity batch also
does (installed by :func:`labapp.create_app`).

- A Location gets its ``hierarchy`` path; its grid and capacity are checked; changing its
  ``parentID`` moves it with everything inside (cycles refused, 409), and a move or a
  rename refreshes the path of every descendant; a move is logged.

Samples and Plates given a ``locationID`` or ``position`` are checked in by the batch's
planner in :mod:`labapp.storage.placement`.
"""
from __future__ import annotations

from typing import Any

from labapp.access.actor import Actor
from labapp.db import db
from labapp.entities.batch import BatchInputError, PreparedItem
from labapp.entities.notation import item_error
from labapp.entities.rules import ClassRules
from labapp.errors import Conflict
from labapp.model import Entity, Location
from labapp.storage import moves
from labapp.storage.checkin import StorageInputError, occupied_positions
from labapp.storage.service import grid_of, has_grid, limit_of, stored_counts
from labapp.storage.slots import parse

MAX_ROWS, MAX_COLUMNS = 702, 999  # ZZ rows; three-digit columns


def _grid_problem(rows: Any, columns: Any, capacity: Any) -> tuple[str, str] | None:
    if capacity is not None and capacity < 0:
        return "capacity", "must not be negative"
    if (rows is None) != (columns is None):
        return ("rows" if rows is None else "columns"), "rows and columns go together"
    if rows is not None and not (1 <= rows <= MAX_ROWS):
        return "rows", f"from 1 to {MAX_ROWS}"
    if columns is not None and not (1 <= columns <= MAX_COLUMNS):
        return "columns", f"from 1 to {MAX_COLUMNS}"
    return None


def _location(entity: Entity) -> Location:
    """The entity the rules of Location were called with (TypeError for any other)."""
    if not isinstance(entity, Location):
        raise TypeError(f"Location rules called on a {type(entity).__name__}")
    return entity


class LocationRules(ClassRules):
    """The rules of the ``Location`` class."""

    def complete_new_row(self, item: PreparedItem, own: dict[str, Any]) -> None:
        problem = _grid_problem(own.get("rows"), own.get("columns"), own.get("capacity"))
        if problem:
            raise item_error(item.index, problem[0], problem[1], BatchInputError)
        if own.get("parent_id"):
            moves.serialize_paths()
        path = moves.path_of(own.get("parent_id"), item.values.get("name") or item.id)
        own["hierarchy"] = path
        moves.remember_new(item.id, path)

    def before_update(self, changed: Entity, changes: dict[str, tuple[Any, Any]]) -> None:
        entity = _location(changed)
        rows = changes.get("rows", (None, entity.rows))[1]
        columns = changes.get("columns", (None, entity.columns))[1]
        capacity = changes.get("capacity", (None, entity.capacity))[1]
        problem = _grid_problem(rows, columns, capacity)
        if problem:
            raise StorageInputError(f"{entity.id}.{problem[0]}: {problem[1]}.")
        if {"rows", "columns", "capacity"} & set(changes):
            _check_still_fits(entity, rows, columns, capacity)
        if "parentID" in changes or "name" in changes:
            moves.serialize_paths()
            db.session.refresh(entity, ["parent_id", "hierarchy"])
        if "parentID" in changes:
            moves.refuse_cycle(entity.id, changes["parentID"][1])
        if "parentID" in changes or "name" in changes:
            parent = changes.get("parentID", (None, entity.parent_id))[1]
            path = moves.path_of(parent, changes.get("name", (None, entity.name))[1])
            if path != entity.hierarchy:
                changes["hierarchy"] = (entity.hierarchy, path)

    def after_update(self, actor: Actor, changed: Entity,
                     changes: dict[str, tuple[Any, Any]]) -> None:
        entity = _location(changed)
        if "hierarchy" in changes:
            if entity.hierarchy is None:
                raise TypeError(f"Location {entity.id} has no hierarchy path")
            moves.refresh_descendants(entity.id, entity.hierarchy)
        if "parentID" in changes:
            old, new = changes["parentID"]
            moves.log_move(entity, old, new, actor.author_id)


def _check_still_fits(location: Location, rows: int | None, columns: int | None,
                      capacity: int | None) -> None:
    """409 when the new grid or capacity would leave stored items without a place."""
    limit = limit_of(capacity, rows, columns)
    stored = stored_counts([location.id]).get(location.id, 0)
    if limit is not None and stored > limit:
        raise Conflict(f"Location {location.id} holds {stored} items; it cannot be limited to "
                       f"{limit}.", code="capacity_in_use")
    if not has_grid(location.rows, location.columns):
        return
    grid = grid_of(rows, columns)
    for position in occupied_positions(location.id):
        cell = parse(position)
        if grid is None or cell is None or cell[0] >= grid[0] or cell[1] >= grid[1]:
            raise Conflict(f"Slot {position} of location {location.id} is taken; the grid "
                           "must keep it.", code="slots_in_use")
