"""Check-in and check-out of samples and plates (decisions §10).

A request is one transaction: every item is read and checked before anything is written,
and any refusal leaves everything as it was. Check-in locks the target location's row first
(``SELECT … FOR UPDATE`` on PostgreSQL; on SQLite the unit of work already holds the write
lock from ``BEGIN IMMEDIATE``), so concurrent check-ins into one location queue and the
capacity and slot checks below count what is really there. Items are locked in id order.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from marshmallow import Schema, ValidationError
from sqlalchemy import bindparam, insert, select, update

from labapp.access.actor import Actor
from labapp.access.visibility import require_writable
from labapp.db import db, table_of
from labapp.entities.audit import json_value
from labapp.errors import Conflict, InvalidInput, NotFound
from labapp.model import AuditEvent, Entity, EntityEvent, Location, Plate, Sample
from labapp.model.types import utc_now
from labapp.storage import log, slots
from labapp.storage.schemas import MAX_ITEMS, ItemRefSchema, StoredItemSchema
from labapp.storage.service import (
    get_location,
    has_grid,
    limit_of,
    locations_api,
    stored_counts,
)

_ENTITY = table_of(Entity)
_TABLES = {"Sample": table_of(Sample), "Plate": table_of(Plate)}


class StorageInputError(InvalidInput):
    code = "invalid_storage_item"


def _item_error(index: int, field: str, message: str) -> StorageInputError:
    """A 400 naming one item of a storage body by its index, and its field."""
    return StorageInputError(f"[{index}].{field}: {message}",
                             errors=[{"field": f"[{index}].{field}", "message": message}])


@dataclass
class Item:
    """One requested item with what is stored about it."""

    index: int
    eclass: str
    id: str
    wanted_position: str | None = None
    location_id: str | None = None
    position: str | None = None
    plate_id: str | None = None
    version: int = 0
    new_position: str | None = None
    body: str = ""  # what the index counts in: "" for a storage request, "entities" for a batch

    @property
    def tag(self) -> str:
        """How errors name the item: ``[3]`` or ``entities[3]``."""
        return f"{self.body}[{self.index}]"

    def error(self, field: str, message: str) -> StorageInputError:
        """A 400 about one field of the item, named as its body names it (``[3].position``
        or, in an entity batch, ``entities.3.position``)."""
        path = f"{self.body}.{self.index}.{field}" if self.body else f"[{self.index}].{field}"
        return StorageInputError(f"{self.tag}.{field}: {message}",
                                 errors=[{"field": path, "message": message}])


def read_request(raw: Any, *, positions: bool) -> list[Item]:
    """The items of a body: an array of ``{eClass, id}`` (plus ``position`` on check-in),
    each loaded through its schema (:mod:`labapp.storage.schemas`); the first error found
    is a 400 naming the item's index and field."""
    if not isinstance(raw, list) or not raw:
        raise StorageInputError("The body must be a non-empty JSON array of {eClass, id}.")
    if len(raw) > MAX_ITEMS:
        raise StorageInputError(f"At most {MAX_ITEMS} items per request.")
    schema = StoredItemSchema() if positions else ItemRefSchema()
    items: list[Item] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise _item_error(index, "_item", "expected an object {eClass, id}")
        try:
            loaded = schema.load(entry)
        except ValidationError as error:
            raise _item_error(index, *_first_error(schema, error)) from None
        entity_id = loaded["id"]
        if entity_id in seen:
            raise _item_error(index, "id", f"{entity_id!r} is also items[{seen[entity_id]}]")
        seen[entity_id] = index
        items.append(Item(index, loaded["eClass"], entity_id, loaded.get("position")))
    return items


def _first_error(schema: Schema, error: ValidationError) -> tuple[str, str]:
    """The field and message to report: an unknown property first, then the schema's
    fields in their order."""
    # marshmallow leaves normalized_messages unannotated; it returns a dict by field.
    messages: dict[str, Any] = error.normalized_messages()  # type: ignore[no-untyped-call]
    order = list(schema.fields)
    field = min(messages, key=lambda name: (order.index(name) if name in order else -1, name))
    found = messages[field]
    return field, found[0] if isinstance(found, list) else str(found)


def _load_items(actor: Actor, items: list[Item]) -> None:
    """Fill in where each item is; 404 (never revealing) / 403 naming the first bad item."""
    by_id = {item.id: item for item in items}
    ids = sorted(by_id)
    found: dict[str, tuple[str, str | None, str | None]] = {}
    for start in range(0, len(ids), 1000):
        chunk = ids[start:start + 1000]
        for row in db.session.execute(select(_ENTITY.c.id, _ENTITY.c.eclass,
                                             _ENTITY.c.department_id, _ENTITY.c.project_id)
                                      .where(_ENTITY.c.id.in_(chunk))):
            found[row.id] = (row.eclass, row.department_id, row.project_id)
    for item in items:
        stored = found.get(item.id)
        hidden = f"[{item.index}]: no {item.eclass} {item.id!r}."
        if stored is None or stored[0] != item.eclass:
            raise NotFound(hidden)
        require_writable(actor, *stored, hidden=hidden, read_only=(
            f"[{item.index}]: you may read but not move {item.eclass} {item.id!r}."))
    lock_items(items)
    for item in items:
        refuse_plated(item)


def refuse_plated(item: Item) -> None:
    """409 ``on_plate`` for a sample on a plate: it is stored with its plate."""
    if item.plate_id is not None:
        raise Conflict(f"{item.tag}: Sample {item.id} is on plate {item.plate_id}; it is "
                       "stored with its plate.", code="on_plate")


def lock_items(items: list[Item]) -> None:
    """Read where each stored item is (and the plate of a sample), locking its rows in id
    order."""
    by_id = {item.id: item for item in items}
    ids = sorted(by_id)
    for eclass, table in _TABLES.items():
        wanted = [item_id for item_id in ids if by_id[item_id].eclass == eclass]
        plate = table.c.plate_id if eclass == "Sample" else None
        columns = [table.c.id, table.c.location_id, table.c.position, _ENTITY.c.version]
        for start in range(0, len(wanted), 1000):
            query = (select(*columns, *(() if plate is None else (plate,)))
                     .join_from(table, _ENTITY, table.c.id == _ENTITY.c.id)
                     .where(table.c.id.in_(wanted[start:start + 1000]))
                     .order_by(table.c.id).with_for_update())
            for row in db.session.execute(query):
                item = by_id[row.id]
                item.location_id, item.position, item.version = (row.location_id,
                                                                 row.position, row.version)
                item.plate_id = row.plate_id if plate is not None else None


def lock_target(actor: Actor, location_id: str) -> Location:
    """The location items go into: visible (404), writable (403), Active (409), its row
    locked until the transaction ends."""
    location = get_location(actor, location_id)
    require_writable(actor, location.eclass, location.department_id, location.project_id,
                     hidden=f"No location {location_id!r}.",
                     read_only=f"You may read but not store into location {location_id!r}.")
    if location.status != "Active":
        raise Conflict(f"Location {location_id} is {location.status}; nothing can be "
                       "checked in.", code="location_inactive")
    db.session.execute(select(Location.__table__.c.id)
                       .where(Location.__table__.c.id == location_id).with_for_update())
    return location


def occupied_positions(location_id: str) -> dict[str, str]:
    """``position → item id`` of the slots taken in a location."""
    taken: dict[str, str] = {}
    for eclass, table in _TABLES.items():
        extra = (table.c.plate_id.is_(None),) if eclass == "Sample" else ()
        for item_id, position in db.session.execute(
                select(table.c.id, table.c.position)
                .where(table.c.location_id == location_id, table.c.position.is_not(None),
                       *extra)):
            taken[position] = item_id
    return taken


def place(location: Any, items: list[Item]) -> list[Item]:
    """Check capacity and slots; set each moving item's ``new_position``. Returns the items
    that change (an item already in its place is left alone).

    ``location`` is a stored :class:`Location` or a stand-in with its ``id``, ``rows``,
    ``columns`` and ``capacity`` (a location the same batch creates)."""
    grid = has_grid(location.rows, location.columns)
    for item in items:
        if item.wanted_position is None:
            continue
        if not grid:
            raise item.error("position", f"location {location.id} has no rows × columns grid")
        canonical = slots.canonical(item.wanted_position, location.rows, location.columns)
        if canonical is None:
            raise item.error("position", f"{item.wanted_position!r} is not a slot of the "
                             f"{location.rows} × {location.columns} grid of {location.id}")
        item.wanted_position = canonical
    moving = [item for item in items if item.location_id != location.id
              or (item.wanted_position is not None and item.wanted_position != item.position)]
    limit = limit_of(location.capacity, location.rows, location.columns)
    if limit is not None:
        here = stored_counts([location.id]).get(location.id, 0)
        for item in moving:
            if item.location_id != location.id:
                here += 1
                if here > limit:
                    raise Conflict(f"{item.tag}: {item.eclass} {item.id} does not fit: "
                                   f"location {location.id} holds at most {limit} items.",
                                   code="location_full")
    if not grid:
        return moving
    leaving = {item.position for item in moving if item.location_id == location.id}
    taken = {position: holder for position, holder in occupied_positions(location.id).items()
             if position not in leaving}
    for item in moving:
        if item.wanted_position is None:
            continue
        if item.wanted_position in taken:
            raise Conflict(f"{item.tag}: slot {item.wanted_position} of location "
                           f"{location.id} is taken.", code="slot_taken")
        taken[item.wanted_position] = item.id
        item.new_position = item.wanted_position
    free = slots.free_cells(location.rows, location.columns, taken)
    for item in moving:
        if item.new_position is None:
            item.new_position = next(free, None)
            if item.new_position is None:
                raise Conflict(f"{item.tag}: no free slot left in location "
                               f"{location.id}.", code="location_full")
    return moving


def _write(items: list[Item], location_id: str | None, user_id: str) -> None:
    """Store ``items`` at ``location_id`` (None: nowhere) with their new positions: rows,
    versions, audit trail, events and the samples on moved plates."""
    now = utc_now()
    for eclass, table in _TABLES.items():
        rows = [{"key": item.id, "loc": location_id, "pos": item.new_position}
                for item in items if item.eclass == eclass]
        if rows:
            db.session.execute(update(table).where(table.c.id == bindparam("key"))
                               .values(location_id=bindparam("loc"),
                                       position=bindparam("pos")), rows,
                               execution_options={"synchronize_session": False})
    db.session.execute(update(_ENTITY).where(_ENTITY.c.id == bindparam("key"))
                       .values(version=bindparam("ver"), modified_by=user_id,
                               modified_utc=now),
                       [{"key": item.id, "ver": item.version + 1} for item in items],
                       execution_options={"synchronize_session": False})
    audits = []
    for item in items:
        changes = {}
        if item.location_id != location_id:
            changes["locationID"] = {"old": item.location_id, "new": location_id}
        if item.position != item.new_position:
            changes["position"] = {"old": item.position, "new": item.new_position}
        audits.append({"entity_id": item.id, "action": "update", "version": item.version + 1,
                       "user_id": user_id, "timestamp_utc": now, "changes": changes})
    db.session.execute(insert(table_of(AuditEvent)), audits)
    record_moves(items, location_id, user_id, now)
    db.session.expire_all()


def record_moves(items: list[Item], location_id: str | None, user_id: str,
                 now: datetime) -> None:
    """What follows once ``items`` are written at ``location_id`` (None: nowhere) with their
    ``new_position``: their ``CheckedOut``/``CheckedIn`` events, the storage log (a move is
    its check-out and its check-in) and the samples on moved plates, which travel along."""
    plates = [item.id for item in items if item.eclass == "Plate"]
    if plates:
        sample = table_of(Sample)
        db.session.execute(update(sample).where(sample.c.plate_id.in_(plates))
                           .values(location_id=location_id, position=None),
                           execution_options={"synchronize_session": False})
    events = []
    for item in items:
        if item.location_id is not None:
            events.append({"entity_id": item.id, "kind": "CheckedOut", "user_id": user_id,
                           "timestamp_utc": now,
                           "data": {"locationID": item.location_id, "position": item.position}})
        if location_id is not None:
            events.append({"entity_id": item.id, "kind": "CheckedIn", "user_id": user_id,
                           "timestamp_utc": now,
                           "data": {"locationID": location_id,
                                    "position": json_value(item.new_position)}})
    if events:
        db.session.execute(insert(table_of(EntityEvent)), events)
    entries = [log.LogEntry(log.CHECKOUT, item.eclass, item.id, item.location_id, item.position)
               for item in items if item.location_id is not None]
    if location_id is not None:
        entries += [log.LogEntry(log.CHECKIN, item.eclass, item.id, location_id,
                                 item.new_position) for item in items]
    log.write(entries, user_id, now)


def check_in(actor: Actor, location_id: str, raw_items: Any) -> dict[str, Any]:
    """Store every item in the location (decisions §10) and return the location.

    Raises 400 (bad body, bad position), 404 (location or item not visible), 403 (not
    writable), 409 ``location_full``, ``slot_taken``, ``on_plate`` or ``location_inactive``.
    """
    items = read_request(raw_items, positions=True)
    location = lock_target(actor, location_id)
    _load_items(actor, items)
    moving = place(location, items)
    if moving:
        _write(moving, location.id, actor.author_id)
    return locations_api([get_location(actor, location_id)])[0]


def check_out(actor: Actor, raw_items: Any) -> dict[str, Any]:
    """Take every item out of where it is stored. Answers the location when all came from
    one location the actor may see, else ``{locations: [...]}`` (the visible ones)."""
    items = read_request(raw_items, positions=False)
    _load_items(actor, items)
    for item in items:
        if item.location_id is None:
            raise Conflict(f"[{item.index}]: {item.eclass} {item.id} is not stored anywhere.",
                           code="not_stored")
    _write(items, None, actor.author_id)
    sources = sorted({item.location_id for item in items if item.location_id is not None})
    visible = []
    for source in sources:
        try:
            visible.append(get_location(actor, source))
        except NotFound:
            continue
    answer = locations_api(visible)
    if len(sources) == 1 and len(answer) == 1:
        return answer[0]
    return {"locations": answer}
