"""Storage locations as the API and the pages show them, and what they hold.

Every location answer carries the computed fields of decisions §10: ``checkin`` and
``checkout`` (how many were ever logged there), ``stored`` (samples and plates inside now:
plates, and samples not on a plate — a sample on a plate travels with it and is counted as
the plate), ``available`` (the limit minus ``stored``, null when unlimited) and
``hierarchy``. The limit is ``capacity``, or the number of slots of a grid location without
one (the smaller of the two when both are set).

:func:`storage_usage` is the public summary other features (dashboards) read.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.entities import loading
from labapp.entities.service import save_batch
from labapp.errors import InvalidInput
from labapp.model import Entity, Location, Plate, Sample
from labapp.model.registry import ClassSpec, existing_class, find_class
from labapp.query.listing import Page
from labapp.reading.lookup import load_visible, to_api
from labapp.storage import log, slots

LOCATION = "Location"
STORABLE_CLASSES = ("Sample", "Plate")
MAX_DEPTH = 64  # a location hierarchy deeper than this is refused as a cycle guard
_PLATE = Plate.__table__.c
_SAMPLE = Sample.__table__.c
_LOCATION = Location.__table__.c
_NUMBERS = re.compile(r"([0-9]+)")  # ASCII digits: other digits are letters to int()


def location_spec() -> ClassSpec:
    """The registry's description of the Location class."""
    return existing_class(LOCATION)


def grid_of(rows: int | None, columns: int | None) -> tuple[int, int] | None:
    """``(rows, columns)`` of a location with these dimensions if it has slots, else None."""
    if rows and columns and rows > 0 and columns > 0:
        return rows, columns
    return None


def has_grid(rows: int | None, columns: int | None) -> bool:
    """Whether a location with these dimensions has slots."""
    return grid_of(rows, columns) is not None


def limit_of(capacity: int | None, rows: int | None, columns: int | None) -> int | None:
    """How many items a location holds at most; None when unlimited."""
    grid = grid_of(rows, columns)
    slots = grid[0] * grid[1] if grid else None
    if capacity is None:
        return slots
    return capacity if slots is None else min(capacity, slots)


def stored_counts(location_ids: Sequence[str]) -> dict[str, int]:
    """``location id → items stored there now`` (every item, visible or not)."""
    counts: dict[str, int] = {}
    for start in range(0, len(location_ids), 1000):
        chunk = list(location_ids[start:start + 1000])
        for column, extra in ((_PLATE.location_id, ()),
                              (_SAMPLE.location_id, (_SAMPLE.plate_id.is_(None),))):
            rows = db.session.execute(select(column, func.count()).where(
                column.in_(chunk), *extra).group_by(column))
            for location_id, count in rows:
                counts[location_id] = counts.get(location_id, 0) + count
    return counts


def computed_fields(rows: Iterable[tuple[str, int | None, int | None, int | None]]
                    ) -> dict[str, dict[str, Any]]:
    """``id → {checkin, checkout, stored, available}`` for ``(id, capacity, rows, columns)``
    rows, in three grouped queries."""
    rows = list(rows)
    ids = [row[0] for row in rows]
    stored = stored_counts(ids)
    logged = log.counts(ids)
    result = {}
    for location_id, capacity, grid_rows, grid_columns in rows:
        limit = limit_of(capacity, grid_rows, grid_columns)
        here = stored.get(location_id, 0)
        checkin, checkout = logged.get(location_id, (0, 0))
        result[location_id] = {"checkin": checkin, "checkout": checkout, "stored": here,
                               "available": None if limit is None else max(limit - here, 0)}
    return result


def locations_api(locations: Sequence[Location]) -> list[dict[str, Any]]:
    """The API form of locations: stored fields plus the computed ones."""
    spec = location_spec()
    extra = computed_fields((loc.id, loc.capacity, loc.rows, loc.columns) for loc in locations)
    return [{**to_api(loc, spec), **extra[loc.id]} for loc in locations]


def get_location(actor: Actor, location_id: str) -> Location:
    """The location, if the actor may see it; 404 otherwise."""
    location = load_visible(actor, location_spec(), location_id)
    if not isinstance(location, Location):
        raise TypeError(f"{location_id} is a {type(location).__name__}, not a Location")
    return location


def location_detail(actor: Actor, location_id: str) -> dict[str, Any]:
    """``GET /api/storage/location/{id}``."""
    return locations_api([get_location(actor, location_id)])[0]


def list_locations(actor: Actor, *, filter_text: str | None = None,
                   orderby: str | None = None, select_text: str | None = None,
                   top: str | None = None, skip: str | None = None) -> Page:
    """A page of visible locations like the entity list, each row with the computed fields
    (when ``$select`` keeps ``id``)."""
    page = loading.list_entities(actor, location_spec(), filter_text=filter_text,
                                 orderby=orderby, select_text=select_text, top=top, skip=skip)
    ids = [row["id"] for row in page.data if "id" in row]
    if ids:
        dims = db.session.execute(select(_LOCATION.id, _LOCATION.capacity, _LOCATION.rows,
                                         _LOCATION.columns).where(_LOCATION.id.in_(ids)))
        extra = computed_fields(dims)
        for row in page.data:
            if "id" in row:
                row.update(extra[row["id"]])
    return page


def ancestors(actor: Actor, location_id: str) -> list[Location]:
    """The visible ancestors of a visible location, root first (404 for the location)."""
    location = get_location(actor, location_id)
    chain: list[str] = []
    parent = location.parent_id
    while parent is not None and parent not in chain and len(chain) < MAX_DEPTH:
        chain.append(parent)
        parent = db.session.scalar(select(_LOCATION.parent_id).where(_LOCATION.id == parent))
    found = {loc.id: loc for loc in db.session.scalars(
        select(Location).where(Location.id.in_(chain), readable(actor, Location)))}
    return [found[key] for key in reversed(chain) if key in found]


def name_order(name: str, key: str) -> tuple[Any, ...]:
    """The sort key of a location named ``name`` (id ``key``) among its siblings: numbers in
    the name by value and letters without case, so "Box 2" comes before "Box 10" and
    "box 3" between them, as people number racks and boxes; then the name and id as they are,
    so the order is total."""
    parts = _NUMBERS.split(name)
    return ([int(part) if index % 2 else part.casefold() for index, part in enumerate(parts)],
            name, key)


def children(actor: Actor, location_id: str) -> list[Location]:
    """The visible direct children of a visible location, by :func:`name_order` (404 for
    the location)."""
    get_location(actor, location_id)
    found = db.session.scalars(select(Location).where(
        Location.parent_id == location_id, readable(actor, Location)))
    return sorted(found, key=lambda location: name_order(location.name, location.id))


@dataclass(frozen=True)
class StoredItem:
    """A visible sample or plate stored in a location."""

    id: str
    eclass: str
    name: str
    barcode: str | None
    position: str | None


def contents(actor: Actor, location_id: str) -> list[StoredItem]:
    """The visible plates and samples (not on a plate) stored in a location, by position
    (:func:`position_order`: A1, A2 … A10, B1) then id; those without a slot last. The
    caller has checked the location is visible."""
    items: list[StoredItem] = []
    for spec_name, model, extra in (("Plate", Plate, ()),
                                    ("Sample", Sample, (Sample.plate_id.is_(None),))):
        rows = db.session.execute(
            select(model.id, model.name, model.barcode, model.position)
            .where(model.location_id == location_id, readable(actor, model), *extra))
        items.extend(StoredItem(row.id, spec_name, row.name, row.barcode, row.position)
                     for row in rows)
    return sorted(items, key=lambda item: (position_order(item.position), item.id))


def position_order(position: str | None) -> tuple[Any, ...]:
    """The sort key of a slot position as people read a box: row by row, columns by number
    (``A2`` before ``A10``, ``B1`` after both), positions that are not a slot after those,
    none last."""
    if position is None:
        return (2,)
    cell = slots.parse(position)
    return (0, *cell) if cell is not None else (1, *name_order(position, position))


def storage_usage(actor: Actor, location_ids: Sequence[str] | None = None
                  ) -> list[dict[str, Any]]:
    """How full the visible locations are: ``[{id, name, hierarchy, locationType, parentID,
    capacity, stored, available}]`` by path, numbers by value ("Box 3" before "Box 10",
    :func:`name_order`). ``location_ids`` narrows the answer (an invisible or unknown id is
    left out). For dashboards."""
    query = select(Location.id, Location.name, Location.hierarchy, Location.location_type,
                   Location.parent_id, Location.capacity, Location.rows, Location.columns
                   ).where(readable(actor, Location))
    if location_ids is not None:
        query = query.where(Location.id.in_(list(location_ids)))
    rows = sorted(db.session.execute(query).all(),
                  key=lambda row: name_order(row.hierarchy or row.name or "", row.id))
    stored = stored_counts([row.id for row in rows])
    usage = []
    for row in rows:
        limit = limit_of(row.capacity, row.rows, row.columns)
        here = stored.get(row.id, 0)
        usage.append({"id": row.id, "name": row.name, "hierarchy": row.hierarchy,
                      "locationType": row.location_type, "parentID": row.parent_id,
                      "capacity": limit, "stored": here,
                      "available": None if limit is None else max(limit - here, 0)})
    return usage


def closed_status(eclass: str, entity_id: str) -> str | None:
    """The status of a sample or plate whose work is over (``Workflow.is_final``: a
    Sample's ``Discarded`` or ``Canceled``), else None. Pages ask before storing it."""
    spec = find_class(eclass)
    status = db.session.scalar(select(Entity.status).where(Entity.id == entity_id))
    if spec is None or status is None or not spec.workflow.is_final(status):
        return None
    return status


def save_locations(actor: Actor, raw_items: Any) -> tuple[list[dict[str, Any]], bool]:
    """``POST /api/storage/location``: the entity batch for Locations (notation included).

    An item without ``eClass`` is a Location; any other class is 400 with its index.
    Returns the saved locations with their computed fields, and whether any was created.
    """
    if not isinstance(raw_items, list) or not raw_items:
        raise InvalidInput("The body must be a non-empty JSON array of locations.",
                           code="invalid_entity")
    items = []
    for index, raw in enumerate(raw_items):
        if not isinstance(raw, dict):
            raise InvalidInput(f"[{index}]: expected an object.", code="invalid_entity",
                               errors=[{"field": f"[{index}]", "message": "expected an object"}])
        eclass = raw.get("eClass", LOCATION)
        if not isinstance(eclass, str) or eclass.lower() != LOCATION.lower():
            raise InvalidInput(f"[{index}].eClass: only Location entities are saved here.",
                               code="invalid_entity",
                               errors=[{"field": f"[{index}].eClass",
                                        "message": "must be Location"}])
        items.append({**raw, "eClass": LOCATION})
    result = save_batch(actor, items)
    ids = [entity["id"] for entity in result.entities]
    db.session.expire_all()
    by_id = {loc.id: loc for loc in db.session.scalars(select(Location)
                                                       .where(Location.id.in_(ids)))}
    return locations_api([by_id[key] for key in ids]), result.created


def find_scanned(actor: Actor, code: str) -> tuple[str, str, str] | None:
    """``(class, id, name)`` of the visible entity a scanned code names: its barcode first,
    else its id; None when nothing visible carries it."""
    for column in (Entity.barcode, Entity.id):
        row = db.session.execute(select(Entity.eclass, Entity.id, Entity.name)
                                 .where(column == code, readable(actor))).first()
        if row is not None:
            return row.eclass, row.id, row.name
    return None


def position_of(eclass: str, entity_id: str) -> tuple[str | None, str | None]:
    """``(locationID, position)`` of a stored sample or plate."""
    table = (Plate if eclass == "Plate" else Sample).__table__
    row = db.session.execute(select(table.c.location_id, table.c.position)
                             .where(table.c.id == entity_id)).first()
    return (row.location_id, row.position) if row else (None, None)
